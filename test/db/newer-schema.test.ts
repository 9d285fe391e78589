import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import pg from 'pg';
import { type Database, migrate, openDatabase, recordSchemaBreak } from '../../src/db/database.ts';
import * as m0028 from '../../src/db/migrations/0028-idempotency-committed.ts';
import { createTestDatabase, postgresSkipReason, type TestDialect } from '../helpers/databases.ts';

/**
 * A database migrated by a newer release (a rollback, or an old process restarting in a rolling
 * deploy): this release starts on it without migrating, unless a newer migration recorded that it
 * breaks earlier releases. Kysely alone refused to run beside a migration it did not know.
 */
for (const dialect of ['sqlite', 'postgres'] as TestDialect[]) {
  describe(`a schema newer than this release [${dialect}]`, {
    skip: dialect === 'postgres' ? postgresSkipReason() : false,
  }, () => {
    let database: Database;
    let drop: () => Promise<void>;
    before(async () => {
      const created = await createTestDatabase(dialect);
      drop = created.drop;
      database = openDatabase(created.config);
      await migrate(database);
    });
    after(async () => {
      await database?.close();
      await drop?.();
    });

    const executed = async (name: string) =>
      sql`INSERT INTO kysely_migration (name, timestamp) VALUES (${name}, ${new Date().toISOString()})`.execute(
        database.db,
      );

    it('starts without migrating beside later migrations it does not know, and says which', async () => {
      await executed('9990-future-additive');
      const heard: string[][] = [];
      assert.deepEqual(await migrate(database, { onNewerSchema: (names) => heard.push(names) }), []);
      assert.deepEqual(heard, [['9990-future-additive']]);
    });

    it('refuses, naming it, when a newer migration recorded that it breaks earlier releases', async () => {
      await executed('9991-future-breaking');
      await recordSchemaBreak(database.db, '9991-future-breaking');
      await recordSchemaBreak(database.db, '9991-future-breaking');
      await assert.rejects(
        migrate(database),
        /migrated by a newer release \(9990-future-additive, 9991-future-breaking\), and 9991-future-breaking cannot run beside this one/,
      );
    });

    it('leaves an unknown migration among its own to Kysely, which refuses it', async () => {
      await sql`DELETE FROM kysely_migration WHERE name LIKE '999%'`.execute(database.db);
      await sql`DELETE FROM schema_breaks WHERE name LIKE '999%'`.execute(database.db);
      await executed('0001a-elsewhere');
      await assert.rejects(migrate(database), /corrupted migrations/);
      await sql`DELETE FROM kysely_migration WHERE name = '0001a-elsewhere'`.execute(database.db);
      assert.deepEqual(await migrate(database), [], 'up to date again');
    });

    it("refuses while a newer release's breaking migration is under way, or was interrupted", async () => {
      // It records its break before its first batch commits, and is not yet a Kysely record.
      await recordSchemaBreak(database.db, '9992-future-under-way');
      await assert.rejects(
        migrate(database),
        /a newer release's migration 9992-future-under-way is under way or was interrupted/,
      );
      await sql`DELETE FROM schema_breaks WHERE name = '9992-future-under-way'`.execute(database.db);
      assert.deepEqual(await migrate(database), [], 'up to date again');
    });
  });
}

// Kysely's PostgreSQL migration lock (an advisory lock on this id).
const KYSELY_LOCK_ID = '3853314791062309107';

/**
 * Migration 0027 was added after 0028 had been committed: a database migrated at those commits has
 * 0028 but not 0027, and Kysely refused it ("corrupted migrations ... 0027 was found in its place").
 */
for (const dialect of ['sqlite', 'postgres'] as TestDialect[]) {
  describe(`a database that ran 0028 before 0027 existed [${dialect}]`, {
    skip: dialect === 'postgres' ? postgresSkipReason() : false,
  }, () => {
    it('runs the missing 0027 after it, then is up to date', async () => {
      const created = await createTestDatabase(dialect);
      const database = openDatabase(created.config);
      try {
        await migrate(database, { to: '0026-word-folding' });
        await m0028.up(database.db as never, dialect);
        await sql`INSERT INTO kysely_migration (name, timestamp)
          VALUES ('0028-idempotency-committed', ${new Date().toISOString()})`.execute(database.db);
        // 0027 and every migration since 0028.
        assert.deepEqual(await migrate(database), ['0027-title-sort-letters', '0029-data-versions']);
        assert.deepEqual(await migrate(database), [], 'up to date');
      } finally {
        await database.close();
        await created.drop();
      }
    });
  });
}

describe('a start while a newer release migrates [postgres]', { skip: postgresSkipReason() }, () => {
  it('starts without migrating once the newer migration commits, not "corrupted migrations"', async () => {
    const created = await createTestDatabase('postgres');
    const database = openDatabase(created.config);
    const newer = new pg.Client({ connectionString: (created.config as { url: string }).url });
    try {
      await migrate(database);
      await newer.connect();
      // The newer release's migrator holds the lock, its additive migration not yet committed.
      await newer.query(`SELECT pg_advisory_lock(${KYSELY_LOCK_ID})`);
      await newer.query('BEGIN');
      await newer.query(
        `INSERT INTO kysely_migration (name, timestamp) VALUES ('9990-future-additive', now()::text)`,
      );
      // This release finds nothing newer yet, goes on to Kysely and waits for the lock.
      const heard: string[][] = [];
      const starting = migrate(database, { onNewerSchema: (n) => heard.push(n) }).then(
        (applied) => ({ applied }),
        (error: Error) => ({ error: error.message }),
      );
      for (let waiting = 0; waiting === 0; await new Promise((r) => setTimeout(r, 20))) {
        const { rows } = await newer.query(
          `SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`,
        );
        waiting = rows[0].n;
      }
      await newer.query('COMMIT');
      await newer.query(`SELECT pg_advisory_unlock(${KYSELY_LOCK_ID})`);
      assert.deepEqual(await starting, { applied: [] });
      assert.deepEqual(heard, [['9990-future-additive']]);
    } finally {
      await newer.end().catch(() => {});
      await database.close();
      await created.drop();
    }
  });
});
