import { sql } from 'kysely';
import type { Db, Dialect, MailOutboxTable } from '../db/types.ts';
import { newId } from '../lib/ids.ts';
import type { SecretBox } from '../lib/secret-box.ts';

export interface OutgoingMail {
  to: string;
  subject: string;
  text: string;
  html: string;
}

/** Queues a message inside the caller's transaction; its body is sealed because it holds a token. */
export async function enqueueMail(
  db: Db,
  box: SecretBox,
  accountId: string,
  mail: OutgoingMail,
  now: string,
) {
  const id = newId('mail');
  await db
    .insertInto('mail_outbox')
    .values({
      account_id: accountId,
      id,
      to_address: mail.to,
      sealed_message: box.seal(JSON.stringify(mail)),
      status: 'pending',
      attempts: 0,
      next_attempt_at: now,
      locked_until: null,
      last_error: null,
      created_at: now,
      sent_at: null,
    })
    .execute();
  return id;
}

/**
 * Withdraws the messages still waiting for one address of an account (a cancelled or re-sent
 * invitation): they end `failed` with `reason`, and their sealed bodies, which hold tokens, are
 * wiped. A message a sender has already claimed may still go out; its token no longer works.
 */
export async function cancelPendingMail(db: Db, accountId: string, to: string, reason: string) {
  await db
    .updateTable('mail_outbox')
    .set({ status: 'failed', sealed_message: null, locked_until: null, last_error: reason })
    .where('account_id', '=', accountId)
    .where('to_address', '=', to)
    .where('status', '=', 'pending')
    .execute();
}

/**
 * Claims up to `limit` due messages for `leaseMs`: a crashed sender's claim simply expires. On
 * PostgreSQL, SKIP LOCKED lets several processes claim disjoint batches at once.
 */
export async function claimDueMail(
  db: Db,
  dialect: Dialect,
  now: string,
  leaseUntil: string,
  limit: number,
): Promise<MailOutboxTable[]> {
  const lock = dialect === 'postgres' ? sql`for update skip locked` : sql``;
  const nowValue = dialect === 'postgres' ? sql`${now}::timestamptz` : sql`${now}`;
  const result = await sql<MailOutboxTable>`
    update mail_outbox set locked_until = ${leaseUntil}
    where (account_id, id) in (
      select account_id, id from mail_outbox
      where status = 'pending' and next_attempt_at <= ${nowValue}
        and (locked_until is null or locked_until < ${nowValue})
      order by next_attempt_at
      limit ${limit}
      ${lock}
    )
    returning *`.execute(db);
  return result.rows;
}

/**
 * Sets the lease of one claimed message to `leaseUntil` (null: none) if it is still this worker's:
 * pending, under the lease this worker last wrote. False when it is not (another worker claimed it
 * after its lease ran out, or it was withdrawn or sent meanwhile).
 */
async function setMailLease(db: Db, row: MailOutboxTable, leaseUntil: string | null): Promise<boolean> {
  if (row.locked_until === null) return false;
  const result = await db
    .updateTable('mail_outbox')
    .set({ locked_until: leaseUntil })
    .where('account_id', '=', row.account_id)
    .where('id', '=', row.id)
    .where('status', '=', 'pending')
    .where('locked_until', '=', row.locked_until)
    .executeTakeFirst();
  if (Number(result.numUpdatedRows) !== 1) return false;
  row.locked_until = leaseUntil;
  return true;
}

/** Extends the lease of one claimed message just before it is sent; false when it is no longer this worker's. */
export const renewMailLease = (db: Db, row: MailOutboxTable, leaseUntil: string): Promise<boolean> =>
  setMailLease(db, row, leaseUntil);

/**
 * Gives a claimed message back unsent (a stopping worker's), so any worker can send it at once
 * rather than after its lease runs out. One no longer this worker's is left as it is.
 */
export async function releaseMailLease(db: Db, row: MailOutboxTable): Promise<void> {
  await setMailLease(db, row, null);
}

/**
 * Marks a message sent and wipes its sealed body: the token must not outlive its delivery. A
 * delivered message is sent whoever holds its lease now (a withdrawn one that still went out too);
 * one already sent, by a worker that took it over after this one's lease ran out, keeps its record.
 */
export async function markMailSent(db: Db, row: MailOutboxTable, now: string) {
  await db
    .updateTable('mail_outbox')
    .set({
      status: 'sent',
      sent_at: now,
      sealed_message: null,
      locked_until: null,
      attempts: row.attempts + 1,
    })
    .where('account_id', '=', row.account_id)
    .where('id', '=', row.id)
    .where('status', '<>', 'sent')
    .execute();
}

/**
 * Records a failed attempt and schedules the next one (or gives up after the last), only while
 * the message is still this worker's (its lease unchanged): once another worker has taken it over,
 * that worker's outcome is the one recorded.
 */
export async function markMailFailed(
  db: Db,
  row: MailOutboxTable,
  error: string,
  nextAttemptAt: string | null,
): Promise<void> {
  await db
    .updateTable('mail_outbox')
    .set({
      attempts: row.attempts + 1,
      last_error: error.slice(0, 500),
      locked_until: null,
      ...(nextAttemptAt ? { next_attempt_at: nextAttemptAt } : { status: 'failed', sealed_message: null }),
    })
    .where('account_id', '=', row.account_id)
    .where('id', '=', row.id)
    .where('status', '=', 'pending')
    .where('locked_until', '=', row.locked_until)
    .execute();
}
