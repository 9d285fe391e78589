import type { Kysely } from 'kysely';
import type { Db } from '../db/types.ts';

export interface IdempotencyRow {
  account_id: string;
  key: string;
  fingerprint: string;
  status: 'running' | 'done';
  response_status: number | null;
  sealed_response: string | null;
  created_at: string;
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

export async function completeIdempotencyKey(
  db: Db,
  accountId: string,
  key: string,
  status: number,
  sealed: string,
): Promise<void> {
  await table(db)
    .updateTable('idempotency_keys')
    .set({ status: 'done', response_status: status, sealed_response: sealed })
    .where('account_id', '=', accountId)
    .where('key', '=', key)
    .execute();
}

/** Forgets a key (the run failed with a 5xx, or the stored answer expired) so a retry runs again. */
export async function releaseIdempotencyKey(db: Db, accountId: string, key: string): Promise<void> {
  await table(db)
    .deleteFrom('idempotency_keys')
    .where('account_id', '=', accountId)
    .where('key', '=', key)
    .execute();
}
