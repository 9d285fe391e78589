import { hotFirst, hotValue } from '../../db/database.ts';
import type { ApiKeysTable, Db, Dialect } from '../../db/types.ts';

export type ApiKeyRow = ApiKeysTable;

export async function insertApiKey(db: Db, row: ApiKeysTable): Promise<void> {
  await db.insertInto('api_keys').values(row).execute();
}

/** What authentication reads about a key on every request. */
export interface KeyForAuth {
  account_id: string;
  key_id: string;
  user_id: string;
  scopes: string;
  revoked_at: string | null;
  role: string;
  status: string;
  plan: string;
}

const AUTH_SELECT = `select k.account_id, k.id as key_id, k.user_id, k.scopes, k.revoked_at, u.role, u.status, a.plan
  from api_keys k
  join users u on u.account_id = k.account_id and u.id = k.user_id
  join accounts a on a.id = k.account_id`;
const byHash = hotFirst<KeyForAuth>(`${AUTH_SELECT} where k.key_hash = ?`);
const byId = hotFirst<KeyForAuth>(`${AUTH_SELECT} where k.account_id = ? and k.id = ?`);

/** What authentication needs about a key, found by its hash: the key, its user and its account. */
export function findKeyForAuth(db: Db, dialect: Dialect, keyHash: string): Promise<KeyForAuth | undefined> {
  return byHash(db, dialect, [keyHash]);
}

/** The same, by the key's primary key (a key already identified by its hash once). */
export function findKeyForAuthById(
  db: Db,
  dialect: Dialect,
  accountId: string,
  keyId: string,
): Promise<KeyForAuth | undefined> {
  return byId(db, dialect, [accountId, keyId]);
}

const authEpoch = hotValue<number>('select v from auth_epoch where id = 1');

/**
 * SQLite: the counter that every update or delete of a key, user or account raises (migration
 * 0021), read before the rows it vouches for. PostgreSQL has none: undefined.
 */
export function readAuthEpoch(db: Db, dialect: Dialect): Promise<number | undefined> {
  if (dialect !== 'sqlite') return Promise.resolve(undefined);
  return authEpoch(db, dialect, []);
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

/** How many unrevoked keys the user holds. */
export async function countActiveKeys(db: Db, accountId: string, userId: string): Promise<number> {
  const row = await db
    .selectFrom('api_keys')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('account_id', '=', accountId)
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null)
    .executeTakeFirstOrThrow();
  return Number(row.n);
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
