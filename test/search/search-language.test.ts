import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { MAX_EXPANSIONS } from '../../src/search/search-index.ts';
import { describeEachDatabase, type TestAccount } from '../helpers/harness.ts';
import { type CorpusName, createNotes, search, seedCorpus } from './corpus.ts';

describeEachDatabase('GET /search: the query language over HTTP', (h) => {
  let acc: TestAccount;
  let byId: Map<string, CorpusName>;
  before(async () => {
    acc = await h.account('enterprise');
    ({ byId } = await seedCorpus(h, acc));
  });

  /** The names of the matching objects, in result order. */
  async function names(q: string): Promise<CorpusName[]> {
    const res = await search(h, acc.adminKey, { q, limit: 100 });
    assert.equal(res.status, 200, `${q}: ${res.raw}`);
    assert.equal(res.body.data.total, res.body.data.results.length);
    return res.body.data.results.map((r: { id: string }) => byId.get(r.id));
  }
  const sorted = async (q: string) => (await names(q)).sort();

  const cases: Array<[string, string, CorpusName[]]> = [
    ['one word', 'finance', ['budget', 'logs', 'report']],
    ['implicit AND', 'finance report', ['report']],
    ['AND', 'finance AND module', ['logs']],
    ['OR', 'espresso OR hiring', ['budget', 'cafe']],
    ['NOT', 'finance NOT report', ['budget', 'logs']],
    ['-term', 'finance -report', ['budget', 'logs']],
    ['-(group)', 'finance -(report OR logs)', ['budget']],
    ['parentheses', '(espresso OR hiring) AND travel', ['budget']],
    ['OR inside AND with NOT', 'finance (report OR NOT budget)', ['logs', 'report']],
    ['lower-case operators are words', 'finance and report', []],
    ['phrase', '"finance module"', ['logs']],
    ['phrase order matters', '"module finance"', []],
    ['phrase with punctuation', '"third-quarter"', ['report']],
    ['unclosed quote', '"finance module', ['logs']],
    ['unclosed parenthesis', '(espresso OR hiring', ['budget', 'cafe']],
    ['prefix wildcard', 'financ*', ['budget', 'logs', 'report']],
    ['prefix is exact, not stemmed', 'runn*', ['report']],
    ['suffix wildcard', '*ance', ['budget', 'logs', 'report']],
    ['inner wildcard', 'f*nce', ['budget', 'logs', 'report']],
    ['infix wildcard', '*spres*', ['cafe']],
    ['short infix wildcard', '*ur*', ['cafe', 'logs', 'security']],
    ['wildcard matching nothing', '*zzq*', []],
    ['negated wildcard', 'common -*spres*', ['budget', 'logs', 'report', 'security']],
    ['title:', 'title:finance', ['report']],
    ['content:', 'content:finance', ['logs']],
    ['tag:', 'tag:finance', ['budget', 'report']],
    ['tags: phrase in one tag', 'tags:"office life"', ['cafe']],
    ['tags: wildcard', 'tags:plan*', ['budget']],
    ['type: exact', 'type:note', ['budget', 'cafe']],
    ['type: no stemming', 'type:notes', []],
    ['type: wildcard', 'type:rec*', ['logs']],
    ['type: negated', 'common -type:note', ['logs', 'report', 'security']],
    ['author: (metadata)', 'author:smith', ['report', 'security']],
    ['author: phrase', 'author:"bob jones"', ['budget']],
    ['status: (metadata)', 'status:draft', ['budget']],
    ['description: (metadata)', 'description:board', ['report']],
    ['other metadata is not searchable', 'emea', []],
    ['unknown field is text', 'region:emea', []],
    ['metadata not in free text', 'smith', []],
    ['case-insensitive', 'FINANCE REPORT', ['report']],
    ['accent-insensitive', 'creme brulee zurich', ['cafe']],
    ['accents in the query', 'CAFÉ', ['cafe']],
    ['stemming', 'run cost', ['report']],
    ['stemming in phrases', '"running cost"', ['report']],
    ['stop words are searchable', '"the third"', ['report']],
  ];
  for (const [what, q, expected] of cases) {
    it(`${what}: ${q}`, async () => {
      assert.deepEqual(await sorted(q), expected.slice().sort());
    });
  }

  describe('wildcards that match more words than a search expands', () => {
    let wide: TestAccount;
    // Consonant endings, so that no two of the words share a stem.
    const letters = 'bcdfghkmnprtvwxz';
    const word = (lead: string, i: number) => `${lead}zqv${letters[i >> 4]}${letters[i & 15]}`;
    before(async () => {
      wide = await h.account('enterprise');
      const bodies: Record<string, Record<string, unknown>> = {};
      // 128 words under `*xzqv*`, one more under `*zqv*` only: one object each.
      for (let i = 0; i < MAX_EXPANSIONS; i++)
        bodies[`x${i}`] = { title: `Item ${i}`, content: word('x', i) };
      bodies.y = { title: 'Item y', content: word('y', 0) };
      await createNotes(h, wide, bodies);
    });

    const counts = async (q: string) => {
      const res = await search(h, wide.adminKey, { q, limit: 100 });
      assert.equal(res.status, 200, res.raw);
      return { total: res.body.data.total, incomplete: res.body.data.incomplete_results };
    };

    it('say so with incomplete_results when a pattern matched more words than were expanded', async () => {
      assert.deepEqual(await counts('*zqv*'), { total: MAX_EXPANSIONS, incomplete: true });
      assert.deepEqual(await counts('item -*zqv*'), { total: 1, incomplete: true });
    });

    it('answer incomplete_results false when every matching word was expanded', async () => {
      assert.deepEqual(await counts('*xzqv*'), { total: MAX_EXPANSIONS, incomplete: false });
      assert.deepEqual(await counts('*yzqv*'), { total: 1, incomplete: false });
      // A prefix wildcard goes through the full-text index, never the vocabulary.
      assert.deepEqual(await counts('xzqv*'), { total: MAX_EXPANSIONS, incomplete: false });
      assert.deepEqual(await counts('item'), { total: MAX_EXPANSIONS + 1, incomplete: false });
    });
  });

  describe('ranking and score', () => {
    let ranked: TestAccount;
    before(async () => {
      ranked = await h.account('enterprise');
      const filler = 'lorem ipsum dolor sit amet '.repeat(4);
      const make = (title: string, tags: string[], content: string) =>
        h.request('POST', '/v1/data', { key: ranked.adminKey, body: { title, type: 'note', tags, content } });
      // Content-only with many occurrences in a short text, tag-only, title-only in a long text.
      await make('Content only', [], 'zephyr zephyr zephyr zephyr zephyr');
      await make('Tag only', ['zephyr'], filler);
      await make('Zephyr', [], `${filler} ${'more words here '.repeat(200)}`);
    });

    it('a title match ranks above a tag match, which ranks above a content match', async () => {
      const res = await search(h, ranked.adminKey, { q: 'zephyr' });
      assert.deepEqual(
        res.body.data.results.map((r: { title: string }) => r.title),
        ['Zephyr', 'Tag only', 'Content only'],
      );
    });

    it('scores are in (0, 1], follow the ranking and are stable', async () => {
      for (const q of ['zephyr', 'zephyr OR lorem', 'zeph*', '*phyr']) {
        const first = await search(h, ranked.adminKey, { q });
        const again = await search(h, ranked.adminKey, { q });
        const scores: number[] = first.body.data.results.map((r: { score: number }) => r.score);
        assert.ok(scores.length > 0, q);
        for (const s of scores) assert.ok(s > 0 && s <= 1, `${q}: score ${s}`);
        for (let i = 1; i < scores.length; i++) assert.ok(scores[i - 1]! >= scores[i]!, `${q}: ${scores}`);
        assert.deepEqual(again.body.data.results, first.body.data.results, `${q} is stable`);
      }
      const one = await search(h, ranked.adminKey, { q: 'zephyr' });
      const [t, g, c] = one.body.data.results.map((r: { score: number }) => r.score);
      assert.ok(t > g && g > c, 'strictly ordered tiers');
    });
  });

  describe('ties', () => {
    it('break by creation time on PostgreSQL and by insertion order on SQLite, reversed by order=asc', async () => {
      const acc = await h.account('enterprise');
      const make = async (title: string, at: string) => {
        h.clock.now = Date.parse(at);
        const res = await h.request('POST', '/v1/data', {
          key: acc.adminKey,
          body: { title, type: 'note', content: 'tiedword here' },
        });
        return res.body.data.id as string;
      };
      // Created second but dated earlier: ids follow real time, created_at the settable clock.
      const first = await make('First', '2026-03-02T00:00:00Z');
      const second = await make('Other', '2026-03-01T00:00:00Z');
      h.clock.now = null;
      const desc = await search(h, acc.adminKey, { q: 'tiedword' });
      const scores = desc.body.data.results.map((r: { score: number }) => r.score);
      assert.equal(scores[0], scores[1], 'a tie');
      const expected = h.dialect === 'postgres' ? [second, first] : [first, second];
      assert.deepEqual(
        desc.body.data.results.map((r: { id: string }) => r.id),
        expected,
      );
      const asc = await search(h, acc.adminKey, { q: 'tiedword', order: 'asc' });
      assert.deepEqual(
        asc.body.data.results.map((r: { id: string }) => r.id),
        expected.slice().reverse(),
      );
    });
  });

  describe('paging through the tiers', () => {
    let acc: TestAccount;
    before(async () => {
      acc = await h.account('enterprise');
      const make = (title: string, tags: string[], content: string) =>
        h.request('POST', '/v1/data', { key: acc.adminKey, body: { title, type: 'note', tags, content } });
      // 12 title matches (4 also tagged), 5 tag-only, 15 content-only with 1..15 occurrences: with
      // limit 5, pages 1-3 lie within the title and tag tiers, page 4 onwards reach the content tier.
      for (let i = 0; i < 12; i++) {
        await make(`Quorbit ${i}`, i % 3 === 0 ? ['quorbit'] : [], `filler ${'quorbit '.repeat(i % 4)}text`);
      }
      for (let i = 0; i < 5; i++) await make(`Tagged ${i}`, ['quorbit'], `filler ${'words '.repeat(i)}`);
      for (let i = 1; i <= 15; i++)
        await make(`Body ${i}`, [], `${'quorbit '.repeat(i)}${'pad '.repeat(20)}`);
    });

    // One word and two wildcards (a prefix, and an infix expanded to words): each takes the cut on
    // the first pages and ranks every match from page 4 on.
    for (const q of ['quorbit', 'quorb*', '*uorbi*']) {
      it(`${q}: pages of 5 put together are the one page of 100, same order and scores`, async () => {
        const whole = await search(h, acc.adminKey, { q, limit: 100 });
        assert.equal(whole.body.data.total, 32);
        const paged: unknown[] = [];
        for (let page = 1; page <= 7; page++) {
          const res = await search(h, acc.adminKey, { q, limit: 5, page });
          assert.equal(res.body.data.total, 32, `page ${page}`);
          paged.push(...res.body.data.results);
        }
        assert.deepEqual(paged, whole.body.data.results);
        const titles = whole.body.data.results.map((r: { title: string }) => r.title);
        assert.ok(
          titles.slice(0, 12).every((t: string) => t.startsWith('Quorbit')),
          titles.join(),
        );
        assert.ok(
          titles.slice(12, 17).every((t: string) => t.startsWith('Tagged')),
          titles.join(),
        );
        assert.ok(
          titles
            .slice(0, 4)
            .every((t: string) => ['Quorbit 0', 'Quorbit 3', 'Quorbit 6', 'Quorbit 9'].includes(t)),
        );
      });
    }
  });

  describe('excerpts', () => {
    const excerptOf = async (q: string, name: CorpusName) => {
      const res = await search(h, acc.adminKey, { q });
      const hit = res.body.data.results.find((r: { id: string }) => byId.get(r.id) === name);
      assert.ok(hit, `${name} found by ${q}`);
      return hit.excerpt as string;
    };

    it('wrap matches in <em> and escape everything else', async () => {
      const excerpt = await excerptOf('comment', 'security');
      assert.equal(
        excerpt,
        'Found &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; in a <em>comment</em> &amp; fixed it. Common mistake.',
      );
      assert.ok(!excerpt.includes('<script>'));
    });

    it('highlight stems, wildcards and phrases', async () => {
      assert.match(await excerptOf('run', 'report'), /<em>running<\/em> costs/);
      assert.match(await excerptOf('*spres*', 'cafe'), /<em>espresso<\/em>/);
      assert.match(
        await excerptOf('"finance module"', 'logs'),
        /the <em>finance<\/em> <em>module<\/em> failed/,
      );
    });

    it('show the title when only the title matched', async () => {
      assert.equal(await excerptOf('review', 'security'), 'Security <em>review</em>');
    });

    it('show the start of the content when the match was in a tag or metadata', async () => {
      const excerpt = await excerptOf('tag:planning', 'budget');
      assert.equal(excerpt, 'The financial plan for next year covers hiring and travel. Common sense.');
      assert.ok(!(await excerptOf('author:smith', 'security')).includes('<script>'));
    });
  });

  describe('invalid queries', () => {
    for (const [q, position] of [
      ['NOT finance', 1],
      ['-finance', 1],
      ['finance OR -report', 12],
    ] as const) {
      it(`${q} is 400 invalid_query naming position ${position}`, async () => {
        const res = await search(h, acc.adminKey, { q });
        assert.equal(res.status, 400);
        assert.equal(res.body.error.code, 'invalid_query');
        assert.match(res.body.error.message, new RegExp(`at character ${position}\\b`));
      });
    }

    it('a query with no searchable word is invalid_query', async () => {
      const res = await search(h, acc.adminKey, { q: '*** ()' });
      assert.equal(res.status, 400);
      assert.equal(res.body.error.code, 'invalid_query');
    });

    it('too many different leading or inner wildcards is invalid_query; a repeated one counts once', async () => {
      const q = Array.from({ length: 9 }, (_, i) => `*a${i}b*`).join(' OR ');
      const res = await search(h, acc.adminKey, { q });
      assert.equal(res.status, 400);
      assert.equal(res.body.error.code, 'invalid_query');
      assert.match(res.body.error.message, /more than 8 different wildcards/);
      const repeated = await search(h, acc.adminKey, { q: Array(9).fill('*ance').join(' OR ') });
      assert.equal(repeated.status, 200, repeated.raw);
    });
  });
});
