import type { ApiKeysTable, Db } from '../../db/types.ts';

export type ApiKeyRow = ApiKeysTable;

export async function insertApiKey(db: Db, row: ApiKeysTable): Promise<void> {
  await db.insertInto('api_keys').values(row).execute();
}

/** What authentication needs about a key, found by its hash: the key, its user and its account. */
export async function findKeyForAuth(db: Db, keyHash: string) {
  return db
    .selectFrom('api_keys as k')
    .innerJoin('users as u', (j) =>
      j.onRef('u.account_id', '=', 'k.account_id').onRef('u.id', '=', 'k.user_id'),
    )
    .innerJoin('accounts as a', 'a.id', 'k.account_id')
    .select([
      'k.account_id',
      'k.id as key_id',
      'k.user_id',
      'k.scopes',
      'k.revoked_at',
      'u.role',
      'u.status',
      'a.plan',
    ])
    .where('k.key_hash', '=', keyHash)
    .executeTakeFirst();
}

/** Live keys of an account, optionally of one user, newest first. */
export async function listApiKeys(
  db: Db,
  accountId: string,
  opts: { userId?: string; limit: number; offset: number },
): Promise<{ rows: ApiKeyRow[]; total: number }> {
  let q = db.selectFrom('api_keys').where('account_id', '=', accountId).where('revoked_at', 'is', null);
  if (opts.userId) q = q.where('user_id', '=', opts.userId);
  const [rows, count] = await Promise.all([
    q
      .selectAll()
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(opts.limit)
      .offset(opts.offset)
      .execute(),
    q.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(count.n) };
}

export async function findApiKey(db: Db, accountId: string, keyId: string): Promise<ApiKeyRow | undefined> {
  return db
    .selectFrom('api_keys')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('id', '=', keyId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
}

export async function revokeApiKey(db: Db, accountId: string, keyId: string, at: string): Promise<boolean> {
  const res = await db
    .updateTable('api_keys')
    .set({ revoked_at: at })
    .where('account_id', '=', accountId)
    .where('id', '=', keyId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

/** Revokes every live key of a user (member removal). */
export async function revokeUserKeys(db: Db, accountId: string, userId: string, at: string): Promise<void> {
  await db
    .updateTable('api_keys')
    .set({ revoked_at: at })
    .where('account_id', '=', accountId)
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null)
    .execute();
}
