import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../types.ts';
import { inTransaction } from './0015-symbol-words.ts';

/**
 * SQLite only: the due index the webhook worker's claims walk (pending deliveries by
 * next_attempt_at) also holds each delivery's account, webhook and id, so a claim reads its scan
 * from the index alone ("USING COVERING INDEX"). A claim that leaves an account or webhook at its
 * share out of the scan walks every due row of theirs (src/events/delivery-queue.ts); with the
 * account and webhook in the index, each row passed over costs an index entry instead of a lookup
 * in the table: at 100,000 due rows of one account 9.7 -> 3.8 ms, while the claim holds the write
 * lock (docs/benchmarks.md "Webhooks").
 *
 * The index keeps its name, its leading column and its WHERE, so the previous release uses it as
 * before (additive). It holds pending deliveries only, so its size follows the queue, not the
 * history: about 12 MB per 100,000 waiting deliveries, three times the old index.
 *
 * PostgreSQL is left as it is: its claim locks and reads each row in the heap anyway (FOR UPDATE
 * SKIP LOCKED), and an index-only scan there depends on the visibility map, which a queue's
 * constant updates keep clear.
 *
 * One transaction; run again, it finds its work done.
 */
const COLUMNS = 'next_attempt_at, account_id, webhook_id, id';

export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  if (dialect !== 'sqlite') return;
  await inTransaction(db, dialect, async (trx) => {
    const { rows } = await sql<{ n: number }>`
      SELECT count(*) AS n FROM pragma_index_info('webhook_deliveries_due_idx')`.execute(trx);
    if (rows[0]!.n === COLUMNS.split(',').length) return;
    await sql`DROP INDEX webhook_deliveries_due_idx`.execute(trx);
    await sql`CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (${sql.raw(COLUMNS)})
      WHERE status = 'pending'`.execute(trx);
  });
}
