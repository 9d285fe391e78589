import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { describeEachDatabase, type TestAccount } from '../helpers/harness.ts';
import { type CorpusName, search, seedCorpus } from './corpus.ts';

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

    it('too many leading or inner wildcards is invalid_query', async () => {
      const q = Array.from({ length: 9 }, (_, i) => `*a${i}b*`).join(' OR ');
      const res = await search(h, acc.adminKey, { q });
      assert.equal(res.status, 400);
      assert.equal(res.body.error.code, 'invalid_query');
    });
  });
});
