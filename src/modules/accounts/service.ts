import type { Database } from '../../db/database.ts';
import { newId } from '../../lib/ids.ts';
import { type Clock, isoNow, systemClock } from '../../lib/time.ts';
import { insertApiKey } from '../api-keys/repo.ts';
import { formatScopes, ROLE_SCOPES } from '../api-keys/scopes.ts';
import { generateApiKey } from '../api-keys/tokens.ts';
import { insertUser } from '../users/repo.ts';
import { findAccount, insertAccount, setAccountPlan } from './repo.ts';

export const PLANS = ['free', 'pro', 'enterprise'] as const;
export type PlanName = (typeof PLANS)[number];

export interface CreatedAccount {
  account: { id: string; name: string; plan: PlanName; created_at: string };
  admin: { id: string; email: string; role: 'admin'; status: 'active' };
  api_key: { id: string; key: string; scopes: string[] };
}

/** Creates an account, its first admin (active) and that admin's first key with every admin scope. */
export async function createAccount(
  database: Database,
  input: { name: string; adminEmail: string; plan?: PlanName },
  clock: Clock = systemClock,
): Promise<CreatedAccount> {
  const now = isoNow(clock);
  const accountId = newId('account');
  const userId = newId('user');
  const keyId = newId('apiKey');
  const plan = input.plan ?? 'free';
  const scopes = [...ROLE_SCOPES.admin];
  const { key, hash, prefix } = generateApiKey();
  await database.db.transaction().execute(async (trx) => {
    await insertAccount(trx, { id: accountId, name: input.name, plan, created_at: now });
    await insertUser(trx, {
      account_id: accountId,
      id: userId,
      email: input.adminEmail,
      email_lower: input.adminEmail.toLowerCase(),
      role: 'admin',
      status: 'active',
      created_at: now,
      updated_at: now,
    });
    await insertApiKey(trx, {
      account_id: accountId,
      id: keyId,
      user_id: userId,
      name: 'initial admin key',
      key_hash: hash,
      key_prefix: prefix,
      scopes: formatScopes(scopes),
      created_at: now,
      revoked_at: null,
    });
  });
  return {
    account: { id: accountId, name: input.name, plan, created_at: now },
    admin: { id: userId, email: input.adminEmail, role: 'admin', status: 'active' },
    api_key: { id: keyId, key, scopes },
  };
}

/** Changes an account's plan; false when the account does not exist. */
export async function changePlan(database: Database, accountId: string, plan: PlanName): Promise<boolean> {
  return setAccountPlan(database.db, accountId, plan);
}

export { findAccount };
