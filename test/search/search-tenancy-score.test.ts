import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import { describeEachDatabase, type TestAccount } from '../helpers/harness.ts';
import { createNotes, search } from './corpus.ts';

// What another account writes must not change what a search of this account finds. On SQLite,
// FTS5's BM25 takes word frequencies and the average length from the whole index, so scores (and,
// for queries of several words, the order within a tier) do shift: docs/search.md "Tenancy" says
// so. The matches, totals and tiers never do; on PostgreSQL (ts_rank) nothing does.

const FILLER = 'lorem ipsum dolor sit amet consectetur adipiscing elit sed do';
const QUERIES = ['zebrafish', 'zebrafish OR quokkaroo', '"zebrafish lorem"', 'zebra*', 'note'];

interface Hit {
  id: string;
  score: number;
}

describeEachDatabase('GET /search: another account writing the searched words', (h) => {
  let acc: TestAccount;
  let other: TestAccount;
  before(async () => {
    acc = await h.account('enterprise');
    other = await h.account('enterprise');
    await createNotes(h, acc, {
      zebra: { title: 'note', content: `zebrafish ${FILLER}` },
      quokka: { title: 'note', content: `quokkaroo ${FILLER}` },
      both: { title: 'zebrafish note', content: `${FILLER} quokkaroo`, tags: ['zebrafish'] },
      plain: { title: 'plain', content: `${FILLER} ${FILLER}` },
    });
  });

  async function answers(): Promise<Map<string, { total: number; hits: Hit[] }>> {
    const out = new Map<string, { total: number; hits: Hit[] }>();
    for (const q of QUERIES) {
      const res = await search(h, acc.adminKey, { q, limit: 100 });
      assert.equal(res.status, 200, res.raw);
      out.set(q, {
        total: res.body.data.total,
        hits: res.body.data.results.map((r: Hit) => ({ id: r.id, score: r.score })),
      });
    }
    return out;
  }

  it('leaves its matches, totals and tiers alone, and on PostgreSQL its scores and order too', async () => {
    const before = await answers();
    assert.equal(before.get('zebrafish')?.total, 2);
    assert.equal(before.get('zebrafish OR quokkaroo')?.total, 3);
    for (let i = 0; i < 40; i++) {
      const body = { type: 'note', title: 'zebrafish', content: `zebrafish quokkaroo ${FILLER} ${FILLER}` };
      const res = await h.request('POST', '/v1/data', { key: other.adminKey, body });
      assert.equal(res.status, 201, res.raw);
    }
    const after = await answers();
    const tiers = (hits: Hit[]) => new Map(hits.map((x) => [x.id, Math.floor(x.score * 7)]));
    for (const q of QUERIES) {
      const was = before.get(q)!;
      const now = after.get(q)!;
      assert.equal(now.total, was.total, q);
      assert.deepEqual(tiers(now.hits), tiers(was.hits), `${q}: the same objects in the same tiers`);
      if (h.dialect === 'postgres') assert.deepEqual(now.hits, was.hits, `${q}: scores and order`);
    }
  });
});
