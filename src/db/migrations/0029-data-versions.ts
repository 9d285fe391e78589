import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../types.ts';

/**
 * SQLite only: one counter per account that triggers raise whenever one of its data objects is
 * created, changed or deleted, whoever writes (this process, the `ads` CLI, another process,
 * plain SQL, a cascade). `GET /data/{id}` keeps the JSON of objects it read with the counter it
 * read before them, and answers from memory only while the account's counter is where it was
 * (src/modules/data/object-cache.ts): one small row read instead of the object's, and every change
 * committed by anyone applies on the next request, as with the auth epoch (migration 0021).
 *
 * The row goes with its account (a cascade), and account ids are never reused, so a counter never
 * comes back to a value it had. An account without a row (none of its objects written since) is
 * never answered from memory. PostgreSQL reads the object on every request, as before: there the
 * read is a round trip either way.
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  if (dialect !== 'sqlite') return;
  // Idempotent, like the other migrations since 0020: a run after a crash starts over.
  await sql`
    create table if not exists data_versions (
      account_id text primary key references accounts (id) on delete cascade,
      v integer not null
    )`.execute(db);
  await sql`insert into data_versions (account_id, v) select id, 0 from accounts where true
    on conflict (account_id) do nothing`.execute(db);
  // A create adds the row of an account's first object; a change or a delete only raises it, so a
  // delete cascading from the account's own (which removes the row first or after) adds nothing.
  await sql`
    create trigger if not exists data_objects_version_insert after insert on data_objects
    begin
      insert into data_versions (account_id, v) values (new.account_id, 1)
        on conflict (account_id) do update set v = v + 1;
    end`.execute(db);
  for (const op of ['update', 'delete'] as const) {
    const row = op === 'delete' ? 'old' : 'new';
    await sql`
      create trigger if not exists ${sql.raw(`data_objects_version_${op}`)} after ${sql.raw(op)} on data_objects
      begin
        update data_versions set v = v + 1 where account_id = ${sql.raw(`${row}.account_id`)};
      end`.execute(db);
  }
}
