import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import { describeEachDatabase, type TestAccount } from '../helpers/harness.ts';
import { createNotes, search } from './corpus.ts';

// What another account writes must not change what a search of this account finds, nor how it
// ranks it. On SQLite every token carries its account's tag (migration 0020), so FTS5's BM25 counts
// a word's rows within the account; its row count and average length stay the whole index's, so
// scores drift a little, alike for objects alike (docs/search.md "Tenancy"). On PostgreSQL
// (ts_rank) nothing moves at all.

const FILLER = 'lorem ipsum dolor sit amet consectetur adipiscing elit sed do';
const QUERIES = ['zebrafish', 'zebrafish OR quokkaroo', '"zebrafish lorem"', 'zebra*', 'note'];

interface Hit {
  id: string;
  score: number;
}

describeEachDatabase('GET /search: another account writing the searched words', (h) => {
  let acc: TestAccount;
  let other: TestAccount;
  let ids: Record<string, string>;
  before(async () => {
    acc = await h.account('enterprise');
    other = await h.account('enterprise');
    ids = await createNotes(h, acc, {
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

  it('leaves its matches, totals, tiers and order alone, and on PostgreSQL its scores too', async () => {
    const before = await answers();
    assert.equal(before.get('zebrafish')?.total, 2);
    assert.equal(before.get('zebrafish OR quokkaroo')?.total, 3);
    const pair = (hits: Hit[]) => ['zebra', 'quokka'].map((k) => hits.find((x) => x.id === ids[k])!.score);
    const [zebra, quokka] = pair(before.get('zebrafish OR quokkaroo')!.hits);
    assert.equal(zebra, quokka, 'alike but for the word');
    // Only one of the two words: with every account's rows counted, its weight would drop for this
    // account too (measured before 0020: 0.084 -> 0.071, and the zebra object ranked second).
    for (let i = 0; i < 40; i++) {
      const body = { type: 'note', title: 'zebrafish', content: `zebrafish ${FILLER} ${FILLER}` };
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
      assert.deepEqual(
        now.hits.map((x) => x.id),
        was.hits.map((x) => x.id),
        `${q}: order`,
      );
      if (h.dialect === 'postgres') assert.deepEqual(now.hits, was.hits, `${q}: scores`);
    }
    const [zebraNow, quokkaNow] = pair(after.get('zebrafish OR quokkaroo')!.hits);
    assert.equal(zebraNow, quokkaNow, 'the other account’s zebrafish objects weigh nothing here');
  });
});
