// `ads reindex`: every object's search entry written again by the current code, in batches, beside
// a running server. Rows written before a layout change keep the old layout until their object is
// written again (docs/deployment.md "Migrations"): on PostgreSQL, entries without rank marks
// (before 0009) or without a pair sketch (before 0019) are correct but slower to search.
import { type Kysely, sql } from 'kysely';
import type { Database } from '../db/database.ts';
import { PROGRESS, rewriteEntries } from '../db/migrations/0015-symbol-words.ts';
import { buildIndexDocument } from './document.ts';

/** The progress record of `ads reindex` in PROGRESS (search_refold_progress). */
export const REINDEX = 'reindex';

export interface ReindexOptions {
  /** Start from the first object even when an interrupted run left progress behind. */
  restart?: boolean;
  batch?: number;
  /** Stop after this many batches (tests: an interrupted run). */
  batches?: number;
  onBatch?: (rewritten: number) => void;
}

/**
 * Rewrites the search entry of every object, `batch` objects per transaction, in (account, id)
 * order, and returns how many it rewrote and whether it resumed an interrupted run. The words an
 * entry holds do not change, so neither do the vocabulary counts; on PostgreSQL each batch locks
 * its objects' rows, so writes to those objects wait for the batch (a few milliseconds per object).
 * Needs a migrated database (migration 0015 creates the progress table).
 */
export async function reindexSearch(
  database: Database,
  opts: ReindexOptions = {},
): Promise<{ rewritten: number; resumed: boolean }> {
  const db = database.db as unknown as Kysely<unknown>;
  const { rows } = await sql<{ last_account: string | null; done: number }>`
    SELECT last_account, done FROM ${sql.table(PROGRESS)} WHERE name = ${REINDEX}`.execute(db);
  const at = rows[0];
  const resumed = at !== undefined && Number(at.done) === 0 && at.last_account !== null && !opts.restart;
  if (at !== undefined && !resumed) {
    // A finished run (or --restart): this run starts again from the first object.
    await sql`UPDATE ${sql.table(PROGRESS)} SET last_account = NULL, last_id = NULL, done = 0
      WHERE name = ${REINDEX}`.execute(db);
  }
  const rewritten = await rewriteEntries(
    db,
    database.dialect,
    REINDEX,
    sql`true`,
    (row) => {
      const doc = buildIndexDocument(row);
      return { old: doc, next: doc };
    },
    { batch: opts.batch ?? 200, batches: opts.batches, onBatch: opts.onBatch },
  );
  return { rewritten, resumed };
}
