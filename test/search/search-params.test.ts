import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { NARROW_ABOVE } from '../../src/search/index-sqlite.ts';
import { describeEachDatabase, type TestAccount } from '../helpers/harness.ts';
import { type CorpusName, search, seedCorpus } from './corpus.ts';

// Every corpus object contains the word "common"; created_at runs report < budget < logs < cafe < security.
describeEachDatabase('GET /search: filters, dates, sorting and pages', (h) => {
  let acc: TestAccount;
  let byId: Map<string, CorpusName>;
  before(async () => {
    acc = await h.account('enterprise');
    ({ byId } = await seedCorpus(h, acc));
  });

  async function names(params: Record<string, string | number | string[]>): Promise<CorpusName[]> {
    const res = await search(h, acc.adminKey, { q: 'common', limit: 100, ...params });
    assert.equal(res.status, 200, res.raw);
    return res.body.data.results.map((r: { id: string }) => byId.get(r.id));
  }
  const sorted = async (params: Record<string, string | number | string[]>) => (await names(params)).sort();

  describe('filters', () => {
    const cases: Array<[string | string[], CorpusName[]]> = [
      ['type:note', ['budget', 'cafe']],
      ['tag:finance', ['budget', 'report']],
      ['tags:finance', ['budget', 'report']],
      [['tag:finance', 'tag:q3'], ['report']],
      [['type:note', 'tag:finance'], ['budget']],
      [['type:note', 'type:record'], []],
      ['tag:office life', ['cafe']],
      ['tag:Finance', []],
      ['tag:fin', []],
      ['status:draft', ['budget']],
      ['author:Ann Smith', ['report', 'security']],
      ['author:ann smith', []],
      ['metadata.region:emea', ['report']],
      ['metadata.Region:emea', []],
      ['metadata.author:Bob Jones', ['budget']],
      ['metadata.status:archived', ['logs']],
      ['Type:note', ['budget', 'cafe']],
    ];
    for (const [filter, expected] of cases) {
      it(`filter=${JSON.stringify(filter)}`, async () => {
        assert.deepEqual(await sorted({ filter }), expected.slice().sort());
      });
    }

    for (const filter of [
      'foo:bar',
      'type:memo',
      'type:Note',
      'nocolon',
      ':x',
      'type:',
      'metadata.:x',
      'metadata:x',
      '',
      `tag:${'x'.repeat(1097)}`,
    ]) {
      const shown = filter.length > 40 ? `${filter.slice(0, 12)}… (${filter.length} characters)` : filter;
      it(`filter=${shown} is 400 invalid_filter`, async () => {
        const res = await search(h, acc.adminKey, { q: 'common', filter });
        assert.equal(res.status, 400);
        assert.equal(res.body.error.code, 'invalid_filter');
      });
    }

    it('takes up to 20 filters; 21 is 400 invalid_request', async () => {
      assert.deepEqual(await sorted({ filter: Array(20).fill('type:note') }), ['budget', 'cafe']);
      const res = await search(h, acc.adminKey, { q: 'common', filter: Array(21).fill('type:note') });
      assert.equal(res.status, 400);
      assert.equal(res.body.error.code, 'invalid_request');
    });

    it('takes a filter of 1,100 characters (no match), not one more', async () => {
      assert.deepEqual(await sorted({ filter: `tag:${'x'.repeat(1096)}` }), []);
    });

    it('counts a filter in characters, as stored values are: a long astral value can be filtered on', async () => {
      // 600 emoji: a valid metadata value (at most 1,000 characters), 1,200 UTF-16 units.
      const value = '😀'.repeat(600);
      const created = await h.request('POST', '/v1/data', {
        key: acc.adminKey,
        body: { title: 'astral', type: 'note', content: 'astral', metadata: { status: value, mood: value } },
      });
      assert.equal(created.status, 201, created.raw);
      for (const filter of [`status:${value}`, `metadata.mood:${value}`]) {
        const res = await search(h, acc.adminKey, { q: 'astral', filter });
        assert.equal(res.status, 200, res.raw.slice(0, 200));
        assert.deepEqual(
          res.body.data.results.map((r: { id: string }) => r.id),
          [created.body.data.id],
        );
      }
      // 1,101 characters is still too long, and the message cuts no character in half.
      const res = await search(h, acc.adminKey, { q: 'astral', filter: `tag:${'😀'.repeat(1097)}` });
      assert.equal(res.status, 400);
      assert.equal(res.body.error.code, 'invalid_filter');
      assert.match(res.body.error.message, /^filter "tag:(😀){36}…" is longer than 1100 characters\.$/u);
    });
  });

  describe('filters on keys and tags with quoting characters', () => {
    let odd: TestAccount;
    const ids: Record<string, string> = {};
    before(async () => {
      odd = await h.account('enterprise');
      const make = async (name: string, tags: string[], metadata: Record<string, string>) => {
        const res = await h.request('POST', '/v1/data', {
          key: odd.adminKey,
          body: { title: name, type: 'note', content: 'oddity', tags, metadata },
        });
        assert.equal(res.status, 201, res.raw);
        ids[res.body.data.id] = name;
      };
      await make('odd', ['quo"te', 'back\\slash', 'ünï', 'x"]', '"'], {
        'a.b': '1',
        'we"ird': '2',
        'x[0]': '3',
        $: '4',
        'back\\slash': '5',
        'ünï ké': '6',
      });
      await make('plain', ['te', 'quo', 'slash'], { a: '1', x: '3', weird: '2', ird: '2' });
    });
    const cases: Array<[string, string[]]> = [
      ['metadata.a.b:1', ['odd']],
      ['metadata.a:1', ['plain']],
      ['metadata.we"ird:2', ['odd']],
      ['metadata.x[0]:3', ['odd']],
      ['metadata.$:4', ['odd']],
      ['metadata.back\\slash:5', ['odd']],
      ['metadata.ünï ké:6', ['odd']],
      ['metadata.ünï ké:7', []],
      ['tag:quo"te', ['odd']],
      ['tag:back\\slash', ['odd']],
      ['tag:ünï', ['odd']],
      ['tag:x"]', ['odd']],
      ['tag:"', ['odd']],
      ['tag:te', ['plain']],
      ['tag:"te', []],
    ];
    for (const [filter, expected] of cases) {
      it(`filter=${filter}`, async () => {
        for (const sort of ['relevance', 'date']) {
          const res = await search(h, odd.adminKey, { q: 'oddity', filter, sort });
          assert.equal(res.status, 200, res.raw);
          assert.deepEqual(
            res.body.data.results.map((r: { id: string }) => ids[r.id]),
            expected,
            `sort=${sort}`,
          );
          assert.equal(res.body.data.total, expected.length);
        }
      });
    }
  });

  // These filters are also looked up in the index (filterMatch in compile-sqlite.ts, filterTsquery
  // in compile-postgres.ts): each case below passes only if that lookup finds every object the
  // filter keeps, and the filter itself still drops the objects the lookup lets through. SQLite
  // does that lookup only above NARROW_ABOVE matches, so each case runs on `zephyr` (the objects
  // below plus FILLERS that no filter keeps) and on `zephyr -filler` (a handful of matches).
  describe('filters the index can answer', () => {
    let acc2: TestAccount;
    const ids: Record<string, string> = {};
    const long = 'x'.repeat(130);
    const manyWords = Array.from({ length: 270 }, (_, i) => `w${i}`).join(' ');
    // The longest tag (64 characters) and metadata value (1,000) the API takes, made of many words.
    const longestTag = manyWords.slice(0, 64).trim();
    const longestValue = manyWords.slice(0, 1000).trim();
    const FILLERS = NARROW_ABOVE + 50;
    before(async () => {
      acc2 = await h.account('enterprise');
      const make = async (name: string, tags: string[], metadata: Record<string, string>, type = 'note') => {
        const res = await h.request('POST', '/v1/data', {
          key: acc2.adminKey,
          body: { title: `${name} zephyr`, type, content: `zephyr ${name}`, tags, metadata },
        });
        assert.equal(res.status, 201, res.raw);
        ids[res.body.data.id] = name;
      };
      await make('long', ['gamma'], { status: `in ${long} review` });
      await make('folded', ['Ünïcode Mixed-Case'], {
        status: 'Published!',
        description: 'A long, winding tale',
      });
      await make('plain', ['a b', 'beta'], { status: 'published', author: 'Ann' }, 'record');
      await make('split', ['alpha', 'beta'], { status: 'in review', description: 'a long winding tale' });
      await make('largest', [longestTag], {
        status: longestValue,
        description: longestValue,
      });
      for (let i = 0; i < FILLERS; i += 50) {
        await Promise.all(
          Array.from({ length: Math.min(50, FILLERS - i) }, async () => {
            const res = await h.request('POST', '/v1/data', {
              key: acc2.adminKey,
              body: {
                title: 'filler zephyr',
                type: 'record',
                content: 'zephyr filler',
                tags: ['filler', 'beta gamma'],
                metadata: { status: 'idle published', author: 'Ann Lee' },
              },
            });
            assert.equal(res.status, 201, res.raw);
          }),
        );
      }
    });
    const cases: Array<[string | string[], string[]]> = [
      ['tag:gamma', ['long']],
      ['tag:alpha beta', []],
      ['tag:Ünïcode Mixed-Case', ['folded']],
      ['tag:unicode mixed case', []],
      ['tag:b', []],
      ['tag:a b', ['plain']],
      ['tag:beta', ['plain', 'split']],
      [`status:in ${long} review`, ['long']],
      ['status:in review', ['split']],
      ['status:published', ['plain']],
      ['status:Published!', ['folded']],
      ['metadata.description:A long, winding tale', ['folded']],
      ['metadata.description:a long winding tale', ['split']],
      [['type:record', 'status:published', 'author:Ann'], ['plain']],
      [['type:note', 'status:published'], []],
      [['type:note', 'tag:beta'], ['split']],
    ];
    for (const [filter, expected] of cases) {
      it(`filter=${JSON.stringify(filter)}`, async () => {
        for (const q of ['zephyr', 'zephyr -filler']) {
          for (const sort of ['relevance', 'date']) {
            const res = await search(h, acc2.adminKey, { q, filter, sort });
            assert.equal(res.status, 200, res.raw);
            const got = res.body.data.results.map((r: { id: string }) => ids[r.id]).sort();
            assert.deepEqual(got, expected.slice().sort(), `q=${q} sort=${sort}`);
            assert.equal(res.body.data.total, expected.length);
          }
        }
      });
    }

    it('the largest filters allowed (20 of up to 1,100 characters, hundreds of words each) are answered', async () => {
      const filter = [
        ...Array.from({ length: 10 }, () => `tag:${longestTag}`),
        ...Array.from(
          { length: 10 },
          (_, i) => `${i % 2 ? 'status' : 'metadata.description'}:${longestValue}`,
        ),
      ];
      const res = await search(h, acc2.adminKey, { q: 'zephyr', filter });
      assert.equal(res.status, 200, res.raw);
      assert.deepEqual(
        res.body.data.results.map((r: { id: string }) => ids[r.id]),
        ['largest'],
      );
      filter[0] = `tag:${manyWords.slice(3, 67).trim()}`;
      const none = await search(h, acc2.adminKey, { q: 'zephyr', filter });
      assert.equal(none.status, 200, none.raw);
      assert.equal(none.body.data.total, 0);
    });

    it('a filter leaves the scores as they are without it, and pages still add up', async () => {
      const score = new Map<string, number>();
      for (let page = 1; page <= Math.ceil((FILLERS + 5) / 100); page++) {
        const all = await search(h, acc2.adminKey, { q: 'zephyr OR beta', limit: 100, page });
        for (const r of all.body.data.results) score.set(r.id, r.score);
      }
      assert.equal(score.size, FILLERS + 5);
      const filtered = await search(h, acc2.adminKey, {
        q: 'zephyr OR beta',
        filter: 'tag:beta',
        limit: 100,
      });
      assert.equal(filtered.body.data.total, 2);
      for (const r of filtered.body.data.results) assert.equal(r.score, score.get(r.id));
      // Ordered by date or title instead, each hit keeps the score of the unfiltered search.
      for (const sort of ['date', 'title']) {
        const sorted = await search(h, acc2.adminKey, { q: 'zephyr OR beta', filter: 'tag:beta', sort });
        assert.equal(sorted.body.data.total, 2);
        for (const r of sorted.body.data.results) assert.equal(r.score, score.get(r.id), sort);
      }
      const first = await search(h, acc2.adminKey, { q: 'zephyr OR beta', filter: 'tag:beta', limit: 1 });
      const second = await search(h, acc2.adminKey, {
        q: 'zephyr OR beta',
        filter: 'tag:beta',
        limit: 1,
        page: 2,
      });
      assert.equal(first.body.data.total, 2);
      assert.equal(second.body.data.total, 2);
      assert.deepEqual(
        [first.body.data.results[0].id, second.body.data.results[0].id],
        filtered.body.data.results.map((r: { id: string }) => r.id),
      );
    });
  });

  describe('from and to', () => {
    const cases: Array<[Record<string, string>, CorpusName[]]> = [
      [{ from: '2026-01-31' }, ['budget', 'cafe', 'logs', 'security']],
      [{ to: '2026-01-31' }, ['budget', 'report']],
      [{ from: '2026-01-31', to: '2026-01-31' }, ['budget']],
      [{ from: '2026-02-01T00:00:00Z' }, ['cafe', 'logs', 'security']],
      [{ from: '2026-02-01T00:00:00.001Z' }, ['cafe', 'security']],
      [{ to: '2026-02-01T00:00:00.000Z' }, ['budget', 'logs', 'report']],
      [{ to: '2026-01-31T23:59:59.998Z' }, ['report']],
      [{ from: '2026-02-01T01:00:00+01:00' }, ['cafe', 'logs', 'security']],
      [{ from: '2026-01-31T19:59:59.999-04:00', to: '2026-01-31T23:59:59.999Z' }, ['budget']],
      [{ from: '2026-01-31T23:59:59.9991Z' }, ['cafe', 'logs', 'security']],
      [{ to: '2026-01-31T23:59:59.9999Z' }, ['budget', 'report']],
      [{ from: '2026-03-02' }, []],
      [{ from: '2026-02-15T12:00:00Z', to: '2026-02-15T12:00:00Z' }, ['cafe']],
      // Year 0 (PostgreSQL has none): read as the first instant of year 1.
      [{ from: '0000-01-01' }, ['budget', 'cafe', 'logs', 'report', 'security']],
      [
        { from: '0000-01-01T05:00:00+01:00', to: '9999-12-31' },
        ['budget', 'cafe', 'logs', 'report', 'security'],
      ],
      [{ to: '0000-12-31' }, []],
      [{ to: '0000-01-01T00:00:00Z' }, []],
      // Bounds finer than a millisecond: compared as sent, then rounded (from up, to down), so
      // equal or ordered bounds within one millisecond are no error, they just admit nothing.
      [{ from: '2026-02-01T00:00:00.0001Z', to: '2026-02-01T00:00:00.0001Z' }, []],
      [{ from: '2026-02-01T00:00:00.0001Z', to: '2026-02-01T00:00:00.0009Z' }, []],
      [{ from: '2026-01-31T23:59:59.9999Z', to: '2026-02-01T00:00:00.0000001Z' }, ['logs']],
      [{ from: '2026-01-31T23:59:59.9999999Z', to: '2026-01-31' }, []],
    ];
    for (const [params, expected] of cases) {
      it(JSON.stringify(params), async () => {
        assert.deepEqual(await sorted(params), expected.slice().sort());
      });
    }

    it('reads an unencoded + offset (a space in the query string) as +', async () => {
      const res = await h.request('GET', '/v1/search?q=common&from=2026-02-01T01:00:00+01:00&limit=100', {
        key: acc.adminKey,
      });
      assert.equal(res.status, 200);
      assert.equal(res.body.data.total, 3);
    });

    const invalid: Array<Record<string, string>> = [
      { from: 'yesterday' },
      { from: '2026-02-30' },
      { to: '2026-13-01' },
      { from: '2026-01-01T00:00:00' },
      { from: '2026-01-01T24:00:00Z' },
      { from: '2026-01-01T10:00:00+25:00' },
      { from: '2026-02-02', to: '2026-02-01' },
      { from: '2026-02-01T00:00:00.001Z', to: '2026-02-01T00:00:00Z' },
      { from: '0000-06-01', to: '0000-03-01' },
      { from: '2026-02-01T00:00:00.0002Z', to: '2026-02-01T00:00:00.0001Z' },
      { from: '2026-02-01T00:00:00.000000001Z', to: '2026-02-01T00:00:00Z' },
    ];
    for (const params of invalid) {
      it(`${JSON.stringify(params)} is 400 invalid_request`, async () => {
        const res = await search(h, acc.adminKey, { q: 'common', ...params });
        assert.equal(res.status, 400);
        assert.equal(res.body.error.code, 'invalid_request');
      });
    }
  });

  describe('sort and order', () => {
    const byDate: CorpusName[] = ['security', 'cafe', 'logs', 'budget', 'report'];
    const byTitle: CorpusName[] = ['budget', 'cafe', 'report', 'security', 'logs'];
    it('date: newest first; order=asc reverses', async () => {
      assert.deepEqual(await names({ sort: 'date' }), byDate);
      assert.deepEqual(await names({ sort: 'date', order: 'desc' }), byDate);
      assert.deepEqual(await names({ sort: 'date', order: 'asc' }), byDate.slice().reverse());
    });

    it('title: A to Z, case-insensitive; order=desc reverses', async () => {
      assert.deepEqual(await names({ sort: 'title' }), byTitle);
      assert.deepEqual(await names({ sort: 'title', order: 'desc' }), byTitle.slice().reverse());
    });

    it('relevance: best first by default; order=asc reverses; scores stay present', async () => {
      const q = 'finance OR common';
      const desc = await search(h, acc.adminKey, { q });
      const asc = await search(h, acc.adminKey, { q, order: 'asc' });
      const byDefault = await search(h, acc.adminKey, { q, sort: 'relevance' });
      assert.deepEqual(byDefault.body.data.results, desc.body.data.results);
      assert.deepEqual(asc.body.data.results, desc.body.data.results.slice().reverse());
      assert.equal(byId.get(desc.body.data.results[0].id), 'report', 'finance in title and tags ranks first');
      const dated = await search(h, acc.adminKey, { q, sort: 'date' });
      const score = new Map(
        desc.body.data.results.map((r: { id: string; score: number }) => [r.id, r.score]),
      );
      for (const r of dated.body.data.results)
        assert.equal(r.score, score.get(r.id), 'same score whatever the sort');
    });

    const invalid: Array<Record<string, string | string[]>> = [
      { sort: 'newest' },
      { order: 'up' },
      { sort: ['date', 'title'] },
    ];
    for (const params of invalid) {
      it(`${JSON.stringify(params)} is 400 invalid_request`, async () => {
        const res = await search(h, acc.adminKey, { q: 'common', ...params });
        assert.equal(res.status, 400);
        assert.equal(res.body.error.code, 'invalid_request');
      });
    }
  });

  describe('pages and the envelope', () => {
    it('pages partition the results; a page past the end is 200 and empty', async () => {
      const seen: string[] = [];
      for (const page of [1, 2, 3]) {
        const res = await search(h, acc.adminKey, { q: 'common', sort: 'date', limit: 2, page });
        assert.equal(res.status, 200);
        const counts = { total: 5, page, pages: 3, limit: 2 };
        for (const [k, v] of Object.entries(counts)) {
          assert.equal(res.body.data[k], v, `data.${k}`);
          assert.equal(res.body.meta[k], v, `meta.${k}`);
        }
        assert.equal(res.body.data.results.length, page < 3 ? 2 : 1);
        seen.push(...res.body.data.results.map((r: { id: string }) => r.id));
      }
      assert.deepEqual(
        seen.map((id) => byId.get(id)),
        ['security', 'cafe', 'logs', 'budget', 'report'],
      );
      const past = await search(h, acc.adminKey, { q: 'common', limit: 2, page: 4, filter: 'type:note' });
      assert.equal(past.status, 200);
      assert.deepEqual(past.body.data.results, []);
      assert.deepEqual([past.body.data.total, past.body.data.pages, past.body.meta.total], [2, 1, 2]);
      // An offset past 2^31 (page 1e9 of 100), or past 2^53 (the last page a client can send), is
      // still an empty page, not an integer overflow.
      for (const page of [1_000_000_000, 1_000_000_001, Number.MAX_SAFE_INTEGER]) {
        const far = await search(h, acc.adminKey, { q: 'common', limit: 100, page });
        assert.equal(far.status, 200, far.raw);
        assert.deepEqual([far.body.data.results, far.body.data.total, far.body.data.page], [[], 5, page]);
      }
    });

    it('defaults to page 1 of 20 and returns exactly the result fields', async () => {
      const res = await search(h, acc.adminKey, { q: 'finance' });
      assert.deepEqual([res.body.data.page, res.body.data.limit, res.body.data.pages], [1, 20, 1]);
      for (const r of res.body.data.results) {
        assert.deepEqual(Object.keys(r).sort(), ['created_at', 'excerpt', 'id', 'score', 'title', 'type']);
        assert.match(r.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      }
      assert.match(res.body.meta.request_id, /^req_/);
    });

    it('a query that can match nothing still answers with the envelope', async () => {
      const res = await search(h, acc.adminKey, { q: 'type:memo' });
      assert.equal(res.status, 200);
      assert.deepEqual(res.body.data, {
        results: [],
        total: 0,
        page: 1,
        pages: 0,
        limit: 20,
        incomplete_results: false,
      });
    });

    const bad: Array<Record<string, string | string[]>> = [
      {},
      { q: '' },
      { q: '   ' },
      { q: 'x'.repeat(1001) },
      { q: ['a', 'b'] },
      { q: 'a', limit: '0' },
      { q: 'a', limit: '101' },
      { q: 'a', limit: 'abc' },
      { q: 'a', page: '0' },
      { q: 'a', page: '1.5' },
      { q: 'a', unknown: '1' },
    ];
    for (const params of bad) {
      it(`${JSON.stringify(params).slice(0, 60)} is 400 invalid_request`, async () => {
        const res = await search(h, acc.adminKey, params);
        assert.equal(res.status, 400);
        assert.equal(res.body.error.code, 'invalid_request');
      });
    }

    it('a 1,000-character query padded with spaces is accepted, however many spaces', async () => {
      for (const pad of [2, 1001, 5000]) {
        const res = await search(h, acc.adminKey, {
          q: `${' '.repeat(pad)}common${' '.repeat(988)}common  `,
        });
        assert.equal(res.status, 200, `${pad}: ${res.raw.slice(0, 200)}`);
        assert.equal(res.body.data.total, 5);
      }
    });
  });
});
