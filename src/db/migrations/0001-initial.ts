import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../types.ts';

/**
 * The first schema. Every table's key and every index lead with account_id: it is the tenancy
 * boundary in every query and the distribution column if PostgreSQL is ever sharded (Citus).
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const ts = dialect === 'postgres' ? sql`timestamptz` : sql`text`;

  await db.schema
    .createTable('accounts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('plan', 'text', (c) => c.notNull().check(sql`plan in ('free', 'pro', 'enterprise')`))
    .addColumn('created_at', ts, (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('users')
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('id', 'text', (c) => c.notNull())
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('email_lower', 'text', (c) => c.notNull())
    .addColumn('role', 'text', (c) => c.notNull().check(sql`role in ('member', 'admin')`))
    .addColumn('status', 'text', (c) => c.notNull().check(sql`status in ('invited', 'active')`))
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('updated_at', ts, (c) => c.notNull())
    .addPrimaryKeyConstraint('users_pk', ['account_id', 'id'])
    .addUniqueConstraint('users_email_uq', ['account_id', 'email_lower'])
    .execute();

  await db.schema
    .createTable('api_keys')
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('id', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text')
    .addColumn('key_hash', 'text', (c) => c.notNull())
    .addColumn('key_prefix', 'text', (c) => c.notNull())
    .addColumn('scopes', 'text', (c) => c.notNull())
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('revoked_at', ts)
    .addPrimaryKeyConstraint('api_keys_pk', ['account_id', 'id'])
    .addForeignKeyConstraint(
      'api_keys_user_fk',
      ['account_id', 'user_id'],
      'users',
      ['account_id', 'id'],
      (c) => c.onDelete('cascade'),
    )
    .execute();
  // The one lookup that cannot know the account: the bearer key itself. SHA-256 of a 256-bit key is
  // unique, so this index is global; under Citus it becomes a reference-table lookup (docs/deployment.md).
  await db.schema.createIndex('api_keys_hash_uq').on('api_keys').column('key_hash').unique().execute();
  await db.schema
    .createIndex('api_keys_user_idx')
    .on('api_keys')
    .columns(['account_id', 'user_id'])
    .execute();

  await db.schema
    .createTable('data_objects')
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('id', 'text', (c) => c.notNull())
    .addColumn('title', 'text', (c) => c.notNull())
    .addColumn('title_sort', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull().check(sql`type in ('document', 'note', 'record')`))
    .addColumn('content', 'text', (c) => c.notNull())
    .addColumn('tags', 'text', (c) => c.notNull())
    .addColumn('metadata', 'text', (c) => c.notNull())
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('updated_at', ts)
    .addPrimaryKeyConstraint('data_objects_pk', ['account_id', 'id'])
    .execute();
  await db.schema
    .createIndex('data_objects_created_idx')
    .on('data_objects')
    .columns(['account_id', 'created_at', 'id'])
    .execute();
  await db.schema
    .createIndex('data_objects_title_idx')
    .on('data_objects')
    .columns(['account_id', 'title_sort', 'id'])
    .execute();

  await db.schema
    .createTable('events')
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('created_at', ts, (c) => c.notNull())
    .addPrimaryKeyConstraint('events_pk', ['account_id', 'id'])
    .execute();
}
