import { randomBytes } from 'node:crypto';
import type { AppContext } from '../../context.ts';
import { type IdempotencyClaim, markClaimCommitted } from '../../db/commit-claim.ts';
import { isUniqueViolation } from '../../db/database.ts';
import { readSnapshot } from '../../db/snapshot.ts';
import type { Db, UsersTable } from '../../db/types.ts';
import { recordEvent } from '../../events/outbox.ts';
import { AppError, notFound } from '../../http/errors.ts';
import { newId } from '../../lib/ids.ts';
import { secretBoxFor } from '../../lib/secrets.ts';
import { isoAfter, isoNow } from '../../lib/time.ts';
import { renderInvitationEmail } from '../../mail/invitation-email.ts';
import { cancelPendingMail, enqueueMail } from '../../mail/outbox.ts';
import { findAccount } from '../accounts/repo.ts';
import { ROLE_SCOPES, type Role } from '../api-keys/scopes.ts';
import { issueKey } from '../api-keys/service.ts';
import { hashSecret } from '../api-keys/tokens.ts';
import {
  consumeInvitation,
  expireInvitations,
  findInvitationOwner,
  insertInvitation,
} from './invitations-repo.ts';
import {
  activateInvitedUser,
  countOtherActiveAdmins,
  deleteUser,
  findUserForUpdate,
  insertUser,
  listUsers,
  lockAccountAdmins,
  updateUser,
} from './repo.ts';

const INVITATION_TTL_MS = 7 * 24 * 3600 * 1000;

/** Row -> API shape. */
export function toUser(row: UsersTable) {
  return {
    id: row.id,
    email: row.email,
    role: row.role as Role,
    status: row.status as 'invited' | 'active',
    created_at: row.created_at,
  };
}

const eventData = (row: UsersTable) => ({ id: row.id, email: row.email, role: row.role, status: row.status });

export async function listMembers(
  ctx: AppContext,
  accountId: string,
  page: { limit: number; offset: number },
) {
  // One snapshot for the page and its total: on PostgreSQL they are two statements.
  const { rows, total } = await readSnapshot(ctx.database.db, ctx.database.dialect, (db) =>
    listUsers(db, accountId, page),
  );
  return { users: rows.map(toUser), total };
}

/** Creates a fresh one-time token for a user and queues the invitation email, in the caller's transaction. */
async function issueInvitation(ctx: AppContext, trx: Db, user: UsersTable, now: string) {
  const token = `adsinv_${randomBytes(32).toString('base64url')}`;
  const expiresAt = new Date(Date.parse(now) + INVITATION_TTL_MS).toISOString();
  await expireInvitations(trx, user.account_id, user.id, now);
  // An earlier invitation still waiting to be sent (SMTP down) would only mail a dead token.
  await cancelPendingMail(trx, user.account_id, user.email, 'cancelled: replaced by a newer invitation');
  await insertInvitation(trx, {
    account_id: user.account_id,
    id: newId('invitation'),
    user_id: user.id,
    token_hash: hashSecret(token),
    expires_at: expiresAt,
    used_at: null,
    created_at: now,
  });
  const account = await findAccount(trx, user.account_id);
  const acceptUrl = `${ctx.config.publicUrl}/v1/invitations/accept?token=${encodeURIComponent(token)}`;
  const message = renderInvitationEmail({
    accountName: account?.name ?? user.account_id,
    role: user.role as Role,
    email: user.email,
    token,
    acceptUrl,
    expiresAt,
    selfSigned: ctx.config.tls === undefined && !ctx.config.publicUrlGiven,
  });
  await enqueueMail(trx, secretBoxFor(ctx.config), user.account_id, { to: user.email, ...message }, now);
}

/** Invites a member: user `invited`, `user.created`, invitation email queued, all in one transaction. */
export async function inviteMember(
  ctx: AppContext,
  accountId: string,
  input: { email: string; role: Role },
  claim?: IdempotencyClaim,
) {
  const now = isoNow(ctx.clock);
  const row: UsersTable = {
    account_id: accountId,
    id: newId('user'),
    email: input.email,
    email_lower: input.email.toLowerCase(),
    role: input.role,
    status: 'invited',
    created_at: now,
    updated_at: now,
  };
  try {
    await ctx.database.db.transaction().execute(async (trx) => {
      await insertUser(trx, row);
      await issueInvitation(ctx, trx, row, now);
      await recordEvent(trx, ctx.database.dialect, accountId, 'user.created', eventData(row), now);
      await markClaimCommitted(trx, claim);
    });
  } catch (err) {
    if (isUniqueViolation(err)) {
      throw new AppError('email_taken', `${input.email} already belongs to a member of this account.`);
    }
    throw err;
  }
  return toUser(row);
}

/** Fails with 409 last_admin when `user` is the account's last active admin. */
async function guardLastAdmin(trx: Db, user: UsersTable, action: string) {
  if (user.role !== 'admin' || user.status !== 'active') return;
  if ((await countOtherActiveAdmins(trx, user.account_id, user.id)) === 0) {
    throw new AppError('last_admin', `Cannot ${action} the account's last active admin.`);
  }
}

/** Changes a member's role; a demotion bites on that user's very next request. */
export async function changeRole(ctx: AppContext, accountId: string, userId: string, role: Role) {
  const { db, dialect } = ctx.database;
  return db.transaction().execute(async (trx) => {
    await lockAccountAdmins(trx, accountId, dialect);
    // Locked (PostgreSQL): an acceptance committing meanwhile is waited for, so the answer and the
    // event carry the status the user has, not the one read before it.
    const user = await findUserForUpdate(trx, dialect, accountId, userId);
    if (!user) throw notFound('user', userId);
    if (user.role === role) return toUser(user);
    if (role !== 'admin') await guardLastAdmin(trx, user, 'demote');
    const now = isoAfter(ctx.clock, user.updated_at);
    await updateUser(trx, accountId, userId, { role, updated_at: now });
    const next = { ...user, role, updated_at: now };
    await recordEvent(
      trx,
      ctx.database.dialect,
      accountId,
      'user.updated',
      { ...eventData(next), changed: ['role'] },
      now,
    );
    return toUser(next);
  });
}

/** Removes a member or cancels an invitation; their keys and invitations go with them. */
export async function removeMember(ctx: AppContext, accountId: string, userId: string) {
  const { db, dialect } = ctx.database;
  await db.transaction().execute(async (trx) => {
    await lockAccountAdmins(trx, accountId, dialect);
    const user = await findUserForUpdate(trx, dialect, accountId, userId);
    if (!user) throw notFound('user', userId);
    await guardLastAdmin(trx, user, 'remove');
    await deleteUser(trx, accountId, userId);
    // A cancelled invitation (a typo in the address, say) must not still reach that address.
    await cancelPendingMail(trx, accountId, user.email, 'cancelled: the user was removed');
    await recordEvent(
      trx,
      ctx.database.dialect,
      accountId,
      'user.deleted',
      eventData(user),
      isoAfter(ctx.clock, user.updated_at),
    );
  });
}

/** Sends a still-invited user a fresh token; earlier tokens stop working. */
export async function resendInvitation(
  ctx: AppContext,
  accountId: string,
  userId: string,
  claim?: IdempotencyClaim,
) {
  const { db, dialect } = ctx.database;
  return db.transaction().execute(async (trx) => {
    // Locked, so two re-sends at once cannot each miss the other's token when voiding earlier ones.
    const user = await findUserForUpdate(trx, dialect, accountId, userId);
    if (!user) throw notFound('user', userId);
    if (user.status !== 'invited') {
      throw new AppError('invalid_request', `User ${userId} has already accepted their invitation.`);
    }
    await issueInvitation(ctx, trx, user, isoNow(ctx.clock));
    await markClaimCommitted(trx, claim);
    return toUser(user);
  });
}

const INVITATION_TOKEN = /^adsinv_[A-Za-z0-9_-]{43}$/;

/**
 * Who owns the Idempotency-Keys of an acceptance (decisions §9: any POST takes one): the token's
 * account, and the token (by its hash) in place of an API key, so a client that lost the answer
 * gets its one-time key again by retrying with the same token, and no one gets it without it.
 * Null (no idempotency) for a token that is not one.
 */
export async function invitationKeyOwner(ctx: AppContext, token: unknown) {
  if (typeof token !== 'string' || !INVITATION_TOKEN.test(token)) return null;
  const tokenHash = hashSecret(token);
  const owner = await findInvitationOwner(ctx.database.db, tokenHash);
  return owner ? { accountId: owner.account_id, owner: `invitation:${tokenHash}`, credential: token } : null;
}

/** Accepts an invitation: the user becomes active and gets a first key with every scope of their role. */
export async function acceptInvitation(ctx: AppContext, token: string, claim?: IdempotencyClaim) {
  const now = isoNow(ctx.clock);
  const invalid = () =>
    new AppError('invalid_token', 'The invitation token is unknown, already used or expired.');
  if (!INVITATION_TOKEN.test(token)) throw invalid();
  const tokenHash = hashSecret(token);
  const { db, dialect } = ctx.database;
  return db.transaction().execute(async (trx) => {
    // The user's row is locked before the invitation's, in the order a re-send takes them, so an
    // accept and a re-send of one user at once wait for each other instead of deadlocking.
    const owner = await findInvitationOwner(trx, tokenHash);
    if (!owner) throw invalid();
    const user = await findUserForUpdate(trx, dialect, owner.account_id, owner.user_id);
    const inv = await consumeInvitation(trx, tokenHash, now);
    if (!inv) throw invalid();
    if (user?.status !== 'invited') throw invalid();
    // `created_at` is the invitation time while invited and the join time once active (spec, User).
    // After the user's last change even when this server's clock is behind the one that made it,
    // so the member's later events keep strictly increasing timestamps (docs/webhooks.md).
    const joined = isoAfter(ctx.clock, user.updated_at);
    // Conditional, so of two tokens accepted at once (one issued just before a re-send voided it)
    // only one activates the user and gets a first key.
    if (!(await activateInvitedUser(trx, user.account_id, user.id, joined))) throw invalid();
    const key = await issueKey(
      ctx,
      user.account_id,
      user.id,
      { name: 'first key (invitation)', scopes: ROLE_SCOPES[user.role as Role] },
      trx,
    );
    await markClaimCommitted(trx, claim);
    const active = { ...user, status: 'active', created_at: joined, updated_at: joined };
    return { user: toUser(active), api_key: { id: key.id, key: key.key, scopes: key.scopes } };
  });
}
