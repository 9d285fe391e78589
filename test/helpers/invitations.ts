import { randomBytes } from 'node:crypto';
import type { Database } from '../../src/db/database.ts';
import { newId } from '../../src/lib/ids.ts';
import { hashSecret } from '../../src/modules/api-keys/tokens.ts';

/** A working invitation token of the user's, written as an invitation writes one (known to the test). */
export async function liveInvitationToken(
  db: Database['db'],
  accountId: string,
  userId: string,
): Promise<string> {
  const token = `adsinv_${randomBytes(32).toString('base64url')}`;
  await db
    .insertInto('invitations')
    .values({
      account_id: accountId,
      id: newId('invitation'),
      user_id: userId,
      token_hash: hashSecret(token),
      expires_at: new Date(Date.now() + 3_600_000).toISOString(),
      used_at: null,
      created_at: new Date().toISOString(),
    })
    .execute();
  return token;
}
