import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import BetterSqlite3 from 'better-sqlite3';
import { sql } from 'kysely';
import { type Database, hotQuery, migrate, openDatabase } from '../../src/db/database.ts';
import { createTestDatabase } from '../helpers/databases.ts';

// On SQLite, hot reads run beside a second connection that holds a WAL read lock for the rest of
// the event-loop turn (src/db/sqlite.ts, readLockHolder), so that the main connection's read locks
// cost no system call. Each read must still see every commit made before it, and the held lock
// must never outlive the turn, nor stand in the way of a write of this process.

const readEpoch = hotQuery<{ v: number }>('select v from auth_epoch where id = 1');
const bumpEpoch = hotQuery('update auth_epoch set v = v + 1 where id = 1');
const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

describe('SQLite read-lock holder', () => {
  let database: Database;
  let other: BetterSqlite3.Database;
  let drop: () => Promise<void>;
  const read = () => readEpoch(database.db, 'sqlite', []);
  const bump = () => other.prepare('update auth_epoch set v = v + 1 where id = 1').run();
  // [busy, frames in the WAL, frames checkpointed]; busy is 1 while a reader stands in the way.
  const truncate = () => other.pragma('wal_checkpoint(TRUNCATE)', { simple: false }) as { busy: number }[];

  before(async () => {
    const created = await createTestDatabase('sqlite');
    drop = created.drop;
    if (created.config.dialect !== 'sqlite') throw new Error('unreachable');
    database = openDatabase(created.config);
    await migrate(database);
    // Another process as SQLite sees it: its own connection, and no waiting on locks.
    other = new BetterSqlite3(created.config.file, { timeout: 0 });
  });
  after(async () => {
    other.close();
    await database.close();
    await drop();
  });

  it('reads what another connection committed just before, within the same turn', async () => {
    await nextTurn();
    const first = read();
    bump();
    const second = read();
    bump();
    const third = read();
    const [[a], [b], [c]] = await Promise.all([first, second, third]);
    assert.equal(b!.v, a!.v + 1);
    assert.equal(c!.v, a!.v + 2);
  });

  it('holds a read lock for the rest of the turn after a hot read, and lets go when the turn ends', async () => {
    await nextTurn();
    bump();
    assert.equal(truncate()[0]!.busy, 0, 'nothing holds a lock between turns');
    bump();
    await read();
    bump();
    assert.equal(truncate()[0]!.busy, 1, 'the WAL cannot be truncated past the held read lock');
    await nextTurn();
    assert.equal(truncate()[0]!.busy, 0, 'released when the turn ended');
  });

  it('lets go before a statement of its own connection that is not a hot read (a write)', async () => {
    await nextTurn();
    await read();
    bump();
    assert.equal(truncate()[0]!.busy, 1);
    await sql`update auth_epoch set v = v + 1 where id = 1`.execute(database.db);
    assert.equal(truncate()[0]!.busy, 0, 'released before the write, in the same turn');
  });

  it('lets go before a hot write, which runs straight on the connection too', async () => {
    await nextTurn();
    const [before] = await read();
    bump();
    assert.equal(truncate()[0]!.busy, 1);
    await bumpEpoch(database.db, 'sqlite', []);
    assert.equal(truncate()[0]!.busy, 0, 'released before the hot write, in the same turn');
    const [after] = await read();
    assert.equal(after!.v, before!.v + 2);
  });
});
