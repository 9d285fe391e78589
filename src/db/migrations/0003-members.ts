import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../types.ts';

/** Invitations (one-time tokens, stored hashed) and the durable mail outbox. */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const ts = dialect === 'postgres' ? sql`timestamptz` : sql`text`;

  await db.schema
    .createTable('invitations')
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('id', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('token_hash', 'text', (c) => c.notNull())
    .addColumn('expires_at', ts, (c) => c.notNull())
    .addColumn('used_at', ts)
    .addColumn('created_at', ts, (c) => c.notNull())
    .addPrimaryKeyConstraint('invitations_pk', ['account_id', 'id'])
    .addForeignKeyConstraint(
      'invitations_user_fk',
      ['account_id', 'user_id'],
      'users',
      ['account_id', 'id'],
      (c) => c.onDelete('cascade'),
    )
    .execute();
  // Like API keys, a token arrives without its account: a global unique index on its hash.
  await db.schema
    .createIndex('invitations_token_uq')
    .on('invitations')
    .column('token_hash')
    .unique()
    .execute();
  await db.schema
    .createIndex('invitations_user_idx')
    .on('invitations')
    .columns(['account_id', 'user_id'])
    .execute();

  await db.schema
    .createTable('mail_outbox')
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('id', 'text', (c) => c.notNull())
    .addColumn('to_address', 'text', (c) => c.notNull())
    .addColumn('sealed_message', 'text')
    .addColumn('status', 'text', (c) => c.notNull().check(sql`status in ('pending', 'sent', 'failed')`))
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('next_attempt_at', ts, (c) => c.notNull())
    .addColumn('locked_until', ts)
    .addColumn('last_error', 'text')
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('sent_at', ts)
    .addPrimaryKeyConstraint('mail_outbox_pk', ['account_id', 'id'])
    .execute();
  // The sender scans due mail across accounts; a partial index keeps that scan to pending rows.
  await sql`create index mail_outbox_due_idx on mail_outbox (next_attempt_at) where status = 'pending'`.execute(
    db,
  );
}
