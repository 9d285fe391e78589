import type { AppContext } from '../../context.ts';
import { type IdempotencyClaim, markClaimCommitted } from '../../db/commit-claim.ts';
import { readSnapshot } from '../../db/snapshot.ts';
import type { Db } from '../../db/types.ts';
import { AppError, BAD_KEY_MESSAGE, forbidden, notFound, unauthorized } from '../../http/errors.ts';
import type { AuthContext } from '../../http/types.ts';
import { newId } from '../../lib/ids.ts';
import { isoNow } from '../../lib/time.ts';
import { findUserForUpdate } from '../users/repo.ts';
import {
  type ApiKeyRow,
  countActiveKeys,
  findApiKey,
  insertApiKey,
  listApiKeys,
  revokeApiKey,
} from './repo.ts';
import { effectiveScopes, formatScopes, parseScopes, type Scope } from './scopes.ts';
import { generateApiKey } from './tokens.ts';

/** The public shape of a key; the secret itself appears only in the create response. */
export function toApiKey(row: ApiKeyRow) {
  return {
    id: row.id,
    name: row.name,
    prefix: row.key_prefix,
    scopes: parseScopes(row.scopes),
    user_id: row.user_id,
    created_at: row.created_at,
  };
}

/** Keys visible to the caller: their own, or every key of the account for an admin. */
export async function listKeys(ctx: AppContext, auth: AuthContext, page: { limit: number; offset: number }) {
  const userId = auth.scopes.includes('admin') ? undefined : auth.userId;
  // One snapshot for the page and its total: on PostgreSQL they are two statements.
  const { rows, total } = await readSnapshot(ctx.database.db, ctx.database.dialect, (db) =>
    listApiKeys(db, auth.accountId, { userId, ...page }),
  );
  return { keys: rows.map(toApiKey), total };
}

/** Issues a key for the caller with at most the caller's effective scopes. */
export async function createKey(
  ctx: AppContext,
  auth: AuthContext,
  input: { name?: string; scopes: Scope[] },
  claim?: IdempotencyClaim,
) {
  const excess = input.scopes.filter((s) => !auth.scopes.includes(s));
  if (excess.length > 0)
    throw forbidden(`A key cannot be given scopes the caller lacks: ${excess.join(', ')}.`);
  // The caller's user removed since its key was checked: the key went with it.
  return issueKey(
    ctx,
    auth.accountId,
    auth.userId,
    input,
    ctx.database.db,
    () => unauthorized(BAD_KEY_MESSAGE),
    claim,
  );
}

/**
 * Unrevoked keys one user may hold. Keys cost nothing to make and each is a credential and a row;
 * without a bound, a script in a loop (or a leaked key) could make millions.
 */
export const MAX_ACTIVE_KEYS_PER_USER = 100;

/**
 * Creates a key row for a user and returns the key once (used by the API and by `ads keys create`).
 * The user is read inside the key's transaction (locked on PostgreSQL, where a concurrent removal or
 * role change then waits, or is waited for), so a key is never made for a user removed meanwhile
 * (the foreign key would fail as a 500) nor with the scopes of a role the user just lost. A user
 * that is gone is `userGone()`: 404 naming the user by default; the API's caller, whose own user
 * it was, gets the 401 of a revoked key (removing a user revokes their keys: decisions §4).
 */
export async function issueKey(
  ctx: Pick<AppContext, 'database' | 'clock'>,
  accountId: string,
  userId: string,
  input: { name?: string; scopes: readonly string[] },
  db: Db = ctx.database.db,
  userGone: () => AppError = () => notFound('user', userId),
  claim?: IdempotencyClaim,
) {
  const { key, hash, prefix } = generateApiKey();
  const insert = async (trx: Db) => {
    // Locked on PostgreSQL, which also serialises concurrent creates for one user so that the bound
    // holds (SQLite serialises writers).
    const user = await findUserForUpdate(trx, ctx.database.dialect, accountId, userId);
    if (!user) throw userGone();
    const granted = effectiveScopes(input.scopes, user.role);
    if (granted.length !== new Set(input.scopes).size) {
      throw new AppError('forbidden', `A ${user.role} cannot hold the scopes ${input.scopes.join(', ')}.`);
    }
    if ((await countActiveKeys(trx, accountId, userId)) >= MAX_ACTIVE_KEYS_PER_USER) {
      throw new AppError(
        'invalid_request',
        `A user can hold at most ${MAX_ACTIVE_KEYS_PER_USER} active API keys; revoke one before creating another.`,
      );
    }
    const row: ApiKeyRow = {
      account_id: accountId,
      id: newId('apiKey'),
      user_id: userId,
      name: input.name ?? null,
      key_hash: hash,
      key_prefix: prefix,
      scopes: formatScopes(granted),
      created_at: isoNow(ctx.clock),
      revoked_at: null,
    };
    await insertApiKey(trx, row);
    await markClaimCommitted(trx, claim);
    return row;
  };
  const row = db.isTransaction ? await insert(db) : await db.transaction().execute(insert);
  return { ...toApiKey(row), key };
}

/** Revokes one key: the caller's own, or any key of the account for an admin. Others' keys are 404. */
export async function deleteKey(ctx: AppContext, auth: AuthContext, keyId: string) {
  const row = await findApiKey(ctx.database.db, auth.accountId, keyId);
  if (!row || (row.user_id !== auth.userId && !auth.scopes.includes('admin')))
    throw notFound('API key', keyId);
  await revokeApiKey(ctx.database.db, auth.accountId, keyId, isoNow(ctx.clock));
}
