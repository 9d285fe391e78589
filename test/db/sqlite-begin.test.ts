import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import BetterSqlite3 from 'better-sqlite3';
import { sql } from 'kysely';
import { type Database, migrate, openDatabase } from '../../src/db/database.ts';
import { readSnapshot } from '../../src/db/snapshot.ts';
import { createTestDatabase } from '../helpers/databases.ts';

// docs/deployment.md: a separate `ads worker` (or a second `ads serve`) may write to the SQLite file
// beside `ads serve`. A transaction that read before it wrote, begun with a plain (deferred) BEGIN,
// then failed at once with SQLITE_BUSY when the other process committed between its read and its
// write: SQLite does not wait on behalf of a transaction whose snapshot is out of date. API writes
// answered 500 and delivery outcomes were lost. Transactions now take the write lock as they begin.
describe('SQLite transactions beside another process writing the same file', () => {
  let database: Database;
  let other: BetterSqlite3.Database;
  let drop: () => Promise<void>;
  const epoch = async () =>
    Number((await sql<{ v: number }>`select v from auth_epoch where id = 1`.execute(database.db)).rows[0]?.v);
  // Another process as SQLite sees it: its own connection. Here it cannot wait for a lock (it
  // shares this thread), so it reports SQLITE_BUSY where a real process would wait.
  const otherBump = () => {
    try {
      other.prepare('update auth_epoch set v = v + 1 where id = 1').run();
      return 'written';
    } catch (err) {
      return (err as { code?: string }).code ?? String(err);
    }
  };

  before(async () => {
    const created = await createTestDatabase('sqlite');
    drop = created.drop;
    if (created.config.dialect !== 'sqlite') throw new Error('unreachable');
    database = openDatabase(created.config);
    await migrate(database);
    other = new BetterSqlite3(created.config.file, { timeout: 0 });
  });
  after(async () => {
    other.close();
    await database.close();
    await drop();
  });

  it('a transaction that reads, then writes, is not failed by the other process: that one waits for it', async () => {
    const start = await epoch();
    let meanwhile = '';
    await database.db.transaction().execute(async (trx) => {
      const read = await sql<{ v: number }>`select v from auth_epoch where id = 1`.execute(trx);
      meanwhile = otherBump();
      await sql`update auth_epoch set v = ${Number(read.rows[0]?.v) + 10} where id = 1`.execute(trx);
    });
    assert.equal(meanwhile, 'SQLITE_BUSY', 'the other process had to wait for the write lock');
    assert.equal(await epoch(), start + 10);
    assert.equal(otherBump(), 'written', 'and writes once the transaction committed');
    assert.equal(await epoch(), start + 11);
  });

  it('a read-only snapshot does not hold the other process up, and reads one moment', async () => {
    const start = await epoch();
    let meanwhile = '';
    const [before, after] = await readSnapshot(database.db, 'sqlite', async (db) => {
      const first = await sql<{ v: number }>`select v from auth_epoch where id = 1`.execute(db);
      meanwhile = otherBump();
      const second = await sql<{ v: number }>`select v from auth_epoch where id = 1`.execute(db);
      return [Number(first.rows[0]?.v), Number(second.rows[0]?.v)];
    });
    assert.equal(meanwhile, 'written');
    assert.deepEqual([before, after], [start, start], 'one snapshot');
    assert.equal(await epoch(), start + 1);
  });
});
