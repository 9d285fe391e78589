import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { type Database, migrate, openDatabase, recordSchemaBreak } from '../../src/db/database.ts';
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
      await executed('0001a-elsewhere');
      await assert.rejects(migrate(database), /corrupted migrations/);
      await sql`DELETE FROM kysely_migration WHERE name = '0001a-elsewhere'`.execute(database.db);
      assert.deepEqual(await migrate(database), [], 'up to date again');
    });
  });
}
