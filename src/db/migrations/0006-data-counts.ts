import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../types.ts';

/**
 * Exact per-account object counts for `GET /data` totals, kept by triggers on data_objects so every
 * writer (API, seeding, cascades) keeps them. The total is the sum of an account's rows. SQLite has
 * one writer and one row per account (stripe 0); PostgreSQL writes the stripe of the session
 * (backend pid mod 16), so concurrent writers to one account rarely wait on the same row lock,
 * and only at commit (the trigger is deferred).
 * No foreign key: a cascade from accounts must not make the trigger's upsert fail.
 */
export const COUNT_STRIPES = 16;

export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  await db.schema
    .createTable('data_object_counts')
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('stripe', 'integer', (c) => c.notNull())
    .addColumn('n', dialect === 'postgres' ? 'bigint' : 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('data_object_counts_pk', ['account_id', 'stripe'])
    .execute();

  if (dialect === 'sqlite') {
    await sql`
      create trigger data_objects_count_ins after insert on data_objects
      begin
        insert into data_object_counts (account_id, stripe, n) values (new.account_id, 0, 1)
          on conflict (account_id, stripe) do update set n = n + 1;
      end`.execute(db);
    await sql`
      create trigger data_objects_count_del after delete on data_objects
      begin
        update data_object_counts set n = n - 1 where account_id = old.account_id and stripe = 0;
      end`.execute(db);
    // After the triggers, in one statement: rows written meanwhile are both counted here and by the
    // trigger's upsert, which this replaces, so the backfill is exact even beside a running writer.
    await sql`
      insert into data_object_counts (account_id, stripe, n)
        select account_id, 0, count(*) from data_objects where true group by account_id
        on conflict (account_id, stripe) do update set n = excluded.n`.execute(db);
    return;
  }

  // PostgreSQL runs migrations in one transaction: writers wait until the counts are in place.
  await sql`lock table data_objects in share mode`.execute(db);
  await sql`
    create function data_objects_count() returns trigger language plpgsql as $$
    begin
      if tg_op = 'INSERT' then
        insert into data_object_counts (account_id, stripe, n)
          values (new.account_id, pg_backend_pid() % ${sql.lit(COUNT_STRIPES)}, 1)
          on conflict (account_id, stripe) do update set n = data_object_counts.n + 1;
      else
        insert into data_object_counts (account_id, stripe, n)
          values (old.account_id, pg_backend_pid() % ${sql.lit(COUNT_STRIPES)}, -1)
          on conflict (account_id, stripe) do update set n = data_object_counts.n - 1;
      end if;
      return null;
    end $$`.execute(db);
  // Deferred to commit: a transaction takes its counter row lock last, after every other lock it
  // needs (search vocabulary, events), so writers never deadlock over it, and hold it only briefly.
  await sql`
    create constraint trigger data_objects_count after insert or delete on data_objects
      deferrable initially deferred
      for each row execute function data_objects_count()`.execute(db);
  await sql`
    insert into data_object_counts (account_id, stripe, n)
      select account_id, 0, count(*) from data_objects group by account_id`.execute(db);
}
