import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../types.ts';

/**
 * SQLite only: a one-row counter that triggers raise whenever a row authentication reads changes
 * (any update or delete of an API key, a user or an account). Authentication keeps the rows it read
 * per token and trusts them only while the counter is where it was when they were read, so a
 * revocation, a role, status or scope change or a plan change made by any writer (this process,
 * the `ads` CLI, another process, plain SQL) applies on the next request, at the cost of reading
 * one small row instead of joining three (src/http/auth.ts). Inserts need no trigger: a new key
 * is found by its hash, and a new user or account has no key yet.
 *
 * PostgreSQL keeps reading the key, user and account on every request: there the read is one round
 * trip either way, so a counter would save nothing.
 */
export const AUTH_EPOCH_TABLES = ['api_keys', 'users', 'accounts'] as const;

export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  if (dialect !== 'sqlite') return;
  // Idempotent, like the rewriting migrations: a run after a crash or a test's replay starts over.
  await sql`create table if not exists auth_epoch (id integer primary key check (id = 1), v integer not null)`.execute(
    db,
  );
  await sql`insert into auth_epoch (id, v) values (1, 0) on conflict (id) do nothing`.execute(db);
  for (const table of AUTH_EPOCH_TABLES) {
    for (const op of ['update', 'delete'] as const) {
      await sql`
        create trigger if not exists ${sql.raw(`${table}_auth_epoch_${op}`)} after ${sql.raw(op)} on ${sql.raw(table)}
        begin
          update auth_epoch set v = v + 1 where id = 1;
        end`.execute(db);
    }
  }
}
