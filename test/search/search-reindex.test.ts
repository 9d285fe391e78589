import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import { sql } from 'kysely';
import { REINDEX, reindexSearch } from '../../src/search/reindex.ts';
import { whileOpen } from '../helpers/concurrency.ts';
import { describeEachDatabase, type TestAccount } from '../helpers/harness.ts';
import { createNotes, foundIds } from './corpus.ts';

// `ads reindex` (src/search/reindex.ts): every object's search entry written again by the current
// code, resumably, without changing what search finds or the vocabulary's counts.
describeEachDatabase('ads reindex: search entries written again', (h) => {
  let acc: TestAccount;
  const queries = ['"omega sigma"', 'report', 'rep*', '*ort', 'title:budget', '"sigma omega"'];

  const vocabulary = async () =>
    (
      await sql<{ word: string; docs: number }>`
        SELECT word, sum(docs) AS docs FROM search_vocab WHERE account_id = ${acc.id}
        GROUP BY word ORDER BY word`.execute(h.database.db)
    ).rows.map((r) => `${r.word}:${Number(r.docs)}`);
  const answers = async () => {
    const out: Record<string, string[]> = {};
    for (const q of queries) out[q] = await foundIds(h, acc.adminKey, q);
    return out;
  };
  const progress = async () =>
    (
      await sql<{ done: number; last_id: string | null }>`
        SELECT done, last_id FROM search_refold_progress WHERE name = ${REINDEX}`.execute(h.database.db)
    ).rows[0];

  before(async () => {
    acc = await h.account('enterprise');
    const bodies: Record<string, Record<string, unknown>> = {};
    for (let i = 0; i < 7; i++) {
      bodies[`o${i}`] = {
        title: i % 2 ? 'Budget report' : 'Weekly notes',
        tags: ['omega sigma', `t${i}`],
        content: `${i % 3 ? 'omega sigma' : 'sigma then omega'} report number ${i} café`,
      };
    }
    await createNotes(h, acc, bodies);
  });

  it('rewrites every entry; searches and vocabulary counts are unchanged', async () => {
    const before = { answers: await answers(), vocabulary: await vocabulary() };
    assert.equal(before.answers['"omega sigma"']!.length, 7, 'every object has the phrase in a tag');
    const { rewritten, resumed } = await reindexSearch(h.database, { batch: 3 });
    assert.ok(rewritten >= 7, `${rewritten}`);
    assert.equal(resumed, false);
    assert.deepEqual(await answers(), before.answers);
    assert.deepEqual(await vocabulary(), before.vocabulary);
    assert.equal(Number((await progress())?.done), 1);
  });

  if (h.dialect === 'postgres')
    it('gives rows written before 0009 and 0019 their rank marks and pair sketch', async () => {
      const db = h.database.db;
      await sql`
        UPDATE search_documents SET pairs = NULL,
          rank = ts_delete(rank, ARRAY(SELECT l FROM unnest(tsvector_to_array(rank)) l WHERE l LIKE '~%'))
        WHERE account_id = ${acc.id}`.execute(db);
      const old = async () =>
        (
          await sql<{ n: number }>`
            SELECT count(*)::int AS n FROM search_documents
            WHERE account_id = ${acc.id} AND (pairs IS NULL OR NOT rank @@ '''~'''::tsquery)`.execute(db)
        ).rows[0]!.n;
      assert.equal(await old(), 7);
      await reindexSearch(h.database);
      assert.equal(await old(), 0);
    });

  if (h.dialect === 'postgres')
    it("locks each batch's objects, so a write to one of them cannot slip between read and rewrite", async () => {
      const db = h.database.db;
      // A write in progress on one object: its UPDATE holds the row (a lock that the foreign key
      // check of the entry's insert does not wait for, so only the batch's own lock can).
      const outcome = await whileOpen(
        (hold) =>
          db.transaction().execute(async (trx) => {
            await sql`
              UPDATE data_objects SET updated_at = updated_at
              WHERE account_id = ${acc.id} AND id = (SELECT min(id) FROM data_objects WHERE account_id = ${acc.id})`.execute(
              trx,
            );
            await hold();
          }),
        () => reindexSearch(h.database, { restart: true }),
        1000,
      );
      assert.equal(outcome, 'waiting', 'the batch waited for the write');
    });

  it('resumes an interrupted run, and a finished run starts again from the first object', async () => {
    const before = await vocabulary();
    const first = await reindexSearch(h.database, { batch: 2, batches: 1 });
    assert.equal(first.rewritten, 2);
    const stopped = await progress();
    assert.equal(Number(stopped?.done), 0, 'interrupted after one batch');
    assert.ok(stopped?.last_id);
    const rest = await reindexSearch(h.database, { batch: 2 });
    assert.equal(rest.resumed, true);
    assert.equal(first.rewritten + rest.rewritten, (await allObjects()).length, 'each object once');
    const again = await reindexSearch(h.database, { batch: 50 });
    assert.equal(again.resumed, false);
    assert.equal(again.rewritten, (await allObjects()).length);
    const restarted = await reindexSearch(h.database, { batch: 2, batches: 1 });
    assert.equal(restarted.rewritten, 2);
    const fromStart = await reindexSearch(h.database, { batch: 50, restart: true });
    assert.equal(fromStart.resumed, false);
    assert.equal(fromStart.rewritten, (await allObjects()).length, '--restart ignores the progress');
    assert.deepEqual(await vocabulary(), before);
    assert.equal((await foundIds(h, acc.adminKey, 'café')).length, 7);
  });

  const allObjects = async () => h.database.db.selectFrom('data_objects').select('id').execute();
});
