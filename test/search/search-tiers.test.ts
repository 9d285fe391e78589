import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import { describeEachDatabase, type TestAccount } from '../helpers/harness.ts';
import { search } from './corpus.ts';

// When a one-word query's title and tag matches fill the requested page, both databases rank only
// those (index-sqlite.ts `searchByRelevance`, migration 0010 on PostgreSQL). Pages on both sides of
// that cut must agree with ranking every match, and the total must count every match.
describeEachDatabase('GET /search: the title and tag tiers', (h) => {
  let acc: TestAccount;
  const inTitle: string[] = [];
  const inTags: string[] = [];
  const inContent: string[] = [];

  before(async () => {
    acc = await h.account('enterprise');
    const add = async (body: Record<string, unknown>, into: string[]) => {
      const res = await h.request('POST', '/v1/data', { key: acc.adminKey, body: { type: 'note', ...body } });
      assert.equal(res.status, 201, res.raw);
      into.push(res.body.data.id);
    };
    for (let i = 0; i < 5; i++) await add({ title: `Zebras ${i}`, content: `plain text ${i}` }, inTitle);
    for (let i = 0; i < 3; i++) await add({ title: `Tagged ${i}`, tags: ['zebra'], content: 'text' }, inTags);
    for (let i = 0; i < 10; i++)
      await add({ title: `Other ${i}`, content: `a zebra ${'x '.repeat(i)}` }, inContent);
    await add({ title: 'Unrelated', content: 'nothing here' }, []);
  });

  const all = async (q: string, limit: number) => {
    const seen: { id: string; score: number }[] = [];
    for (let page = 1; page <= 20; page++) {
      const res = await search(h, acc.adminKey, { q, limit, page });
      assert.equal(res.status, 200, res.raw);
      assert.equal(res.body.data.total, 18, `${q}: total on page ${page}`);
      assert.equal(res.body.data.pages, Math.ceil(18 / limit));
      if (res.body.data.results.length === 0) break;
      seen.push(...res.body.data.results);
    }
    return seen;
  };

  for (const q of ['zebra', 'zeb*']) {
    for (const limit of [2, 3, 5, 8, 20]) {
      it(`${q}, ${limit} per page: titles, then tags, then content, every match once`, async () => {
        const seen = await all(q, limit);
        const ids = seen.map((r) => r.id);
        assert.equal(new Set(ids).size, 18);
        assert.deepEqual(ids.slice(0, 5).sort(), [...inTitle].sort());
        assert.deepEqual(ids.slice(5, 8).sort(), [...inTags].sort());
        assert.deepEqual(ids.slice(8).sort(), [...inContent].sort());
        for (let i = 1; i < seen.length; i++) assert.ok(seen[i]!.score <= seen[i - 1]!.score, `${q} at ${i}`);
      });
    }
  }

  it('the same pages as a query that cannot use the cut', async () => {
    // `zebra OR zzzz` matches the same objects with the same scores, but is not one word.
    for (const limit of [3, 8]) {
      const one = await all('zebra', limit);
      const two = await all('zebra OR zzzz', limit);
      assert.deepEqual(
        one.map((r) => r.id),
        two.map((r) => r.id),
      );
    }
  });
});
