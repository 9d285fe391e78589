import type { Db, InvitationsTable } from '../../db/types.ts';

export async function insertInvitation(db: Db, row: InvitationsTable): Promise<void> {
  await db.insertInto('invitations').values(row).execute();
}

/** Ends every open invitation of a user (a fresh one replaces them). */
export async function expireInvitations(
  db: Db,
  accountId: string,
  userId: string,
  at: string,
): Promise<void> {
  await db
    .updateTable('invitations')
    .set({ used_at: at })
    .where('account_id', '=', accountId)
    .where('user_id', '=', userId)
    .where('used_at', 'is', null)
    .execute();
}

/**
 * Uses a token once: marks the matching open, unexpired invitation used and returns it. Two
 * concurrent accepts race on the same row; only the one whose UPDATE matched gets it back.
 */
export async function consumeInvitation(db: Db, tokenHash: string, now: string) {
  return db
    .updateTable('invitations')
    .set({ used_at: now })
    .where('token_hash', '=', tokenHash)
    .where('used_at', 'is', null)
    .where('expires_at', '>', now)
    .returning(['account_id', 'user_id'])
    .executeTakeFirst();
}

/** Whose invitation a token is (used or not): the account and user, to lock before using it. */
export async function findInvitationOwner(db: Db, tokenHash: string) {
  return db
    .selectFrom('invitations')
    .select(['account_id', 'user_id'])
    .where('token_hash', '=', tokenHash)
    .executeTakeFirst();
}
