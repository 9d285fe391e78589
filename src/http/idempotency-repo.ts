import { type Kysely, sql } from 'kysely';
import type { Db } from '../db/types.ts';

export interface IdempotencyRow {
  account_id: string;
  key: string;
  fingerprint: string;
  status: 'running' | 'done';
  response_status: number | null;
  sealed_response: string | null;
  created_at: string;
  /** The run holding the key (migration 0013); null on rows from before it. */
  claim: string | null;
  /** 1 once the run's change committed, before its answer is stored (src/db/commit-claim.ts; migration 0028). */
  committed?: number;
}

const table = (db: Db) => (db as Kysely<unknown>).withTables<{ idempotency_keys: IdempotencyRow }>();

/** Claims a key for a first run; false when a row for it already exists. */
export async function claimIdempotencyKey(db: Db, row: IdempotencyRow): Promise<boolean> {
  const res = await table(db)
    .insertInto('idempotency_keys')
    .values(row)
    .onConflict((oc) => oc.columns(['account_id', 'key']).doNothing())
    .executeTakeFirst();
  return Number(res.numInsertedOrUpdatedRows ?? 0) > 0;
}

export async function findIdempotencyKey(db: Db, accountId: string, key: string) {
  return table(db)
    .selectFrom('idempotency_keys')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('key', '=', key)
    .executeTakeFirst();
}

/** Stores the answer of the run holding `claim`; a no-op once another run has taken the key over. */
export async function completeIdempotencyKey(
  db: Db,
  accountId: string,
  key: string,
  claim: string,
  status: number,
  sealed: string,
): Promise<void> {
  await table(db)
    .updateTable('idempotency_keys')
    .set({ status: 'done', response_status: status, sealed_response: sealed })
    .where('account_id', '=', accountId)
    .where('key', '=', key)
    .where('claim', '=', claim)
    .execute();
}

/**
 * Forgets a key as it was read or claimed (`row`: the run failed with a 5xx, its answer expired,
 * or its run was abandoned), so a retry runs again; a no-op if the row changed meanwhile.
 */
export async function releaseIdempotencyKey(
  db: Db,
  row: Pick<IdempotencyRow, 'account_id' | 'key' | 'claim'>,
  opts: { uncommitted?: boolean } = {},
): Promise<boolean> {
  let query = table(db)
    .deleteFrom('idempotency_keys')
    .where('account_id', '=', row.account_id)
    .where('key', '=', row.key)
    .where('claim', row.claim === null ? 'is' : '=', row.claim);
  // Only a run whose change did not commit (src/db/commit-claim.ts) may run again.
  if (opts.uncommitted) query = query.where('committed', '=', 0);
  const res = await query.executeTakeFirst();
  return Number(res.numDeletedRows ?? 0) > 0;
}

/** Deletes up to `limit` keys stored before `before` (their answers are no longer replayed). */
export async function purgeIdempotencyKeys(db: Db, before: string, limit: number): Promise<number> {
  const res = await sql`
    DELETE FROM idempotency_keys WHERE (account_id, key) IN (
      SELECT account_id, key FROM idempotency_keys WHERE created_at < ${before} LIMIT ${limit})`.execute(db);
  return Number(res.numAffectedRows ?? 0);
}
