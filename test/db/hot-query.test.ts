import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { type Database, hotFirst, hotQuery, hotValue, migrate, openDatabase } from '../../src/db/database.ts';
import { createTestDatabase } from '../helpers/databases.ts';
import { describeEachDatabase, type TestAccount } from '../helpers/harness.ts';

// hotQuery runs a statement straight on SQLite's one connection when no transaction is open on it
// (src/db/database.ts). Those reads must never see a write that an open transaction has not
// committed: on that same connection they would, unless they wait for Kysely's connection mutex.

const readOne = hotQuery<{ id: string; title: string }>(
  'select id, title from data_objects where account_id = ? and id = ?',
);
const firstOf = hotFirst<{ id: string; title: string }>(
  'select id, title from data_objects where account_id = ? and id = ?',
);
const titleOf = hotValue<string>('select title from data_objects where account_id = ? and id = ?');
const ms = (n: number) => new Promise((r) => setTimeout(r, n));

describeEachDatabase('hotQuery beside an open transaction', (h) => {
  let acc: TestAccount;
  let existing: string;
  before(async () => {
    acc = await h.account('enterprise');
    const res = await h.request('POST', '/v1/data', {
      key: acc.adminKey,
      body: { title: 'committed', type: 'note', content: 'x' },
    });
    assert.equal(res.status, 201, res.raw);
    existing = res.body.data.id;
  });

  const insert = (trx: Parameters<typeof readOne>[0], id: string, title: string) =>
    sql`insert into data_objects (account_id, id, title, title_sort, type, content, tags, metadata, created_at, updated_at)
      values (${acc.id}, ${id}, ${title}, ${title}, 'note', '', '[]', '{}', '2026-01-01T00:00:00.000Z',
        '2026-01-01T00:00:00.000Z')`.execute(trx);

  it('does not read a row that an open transaction inserted and then rolled back', async () => {
    const { db, dialect } = h.database;
    const id = 'dat_01HOTQUERYUNCOMMITTED0001';
    let read: Promise<{ id: string }[]> | undefined;
    await assert.rejects(
      db.transaction().execute(async (trx) => {
        await insert(trx, id, 'uncommitted');
        read = readOne(db, dialect, [acc.id, id]);
        await ms(20);
        throw new Error('roll back');
      }),
      /roll back/,
    );
    assert.deepEqual(await read, []);
    assert.deepEqual(await readOne(db, dialect, [acc.id, id]), []);
  });

  it('does not read an update that an open transaction made and then rolled back', async () => {
    const { db, dialect } = h.database;
    let read: Promise<{ title: string }[]> | undefined;
    await assert.rejects(
      db.transaction().execute(async (trx) => {
        await sql`update data_objects set title = 'changed' where account_id = ${acc.id} and id = ${existing}`.execute(
          trx,
        );
        read = readOne(db, dialect, [acc.id, existing]);
        await ms(20);
        throw new Error('roll back');
      }),
      /roll back/,
    );
    assert.deepEqual(
      (await read)?.map((r) => r.title),
      ['committed'],
    );
  });

  it('reads within the transaction it is given, and directly outside one', async () => {
    const { db, dialect } = h.database;
    const id = 'dat_01HOTQUERYINSIDETRX000001';
    await assert.rejects(
      db.transaction().execute(async (trx) => {
        await insert(trx, id, 'inside');
        assert.deepEqual(
          (await readOne(trx, dialect, [acc.id, id])).map((r) => r.title),
          ['inside'],
        );
        throw new Error('roll back');
      }),
      /roll back/,
    );
    assert.deepEqual(
      (await readOne(db, dialect, [acc.id, existing])).map((r) => r.title),
      ['committed'],
    );
  });

  it('GET /data/{id} waits for an open transaction and never answers its uncommitted writes', async () => {
    const { db } = h.database;
    const id = 'dat_01HOTQUERYGETDURINGTRX001';
    let changed: Promise<{ status: number; body: { data: { title: string } } }> | undefined;
    let added: Promise<{ status: number }> | undefined;
    await assert.rejects(
      db.transaction().execute(async (trx) => {
        await sql`update data_objects set title = 'changed' where account_id = ${acc.id} and id = ${existing}`.execute(
          trx,
        );
        await insert(trx, id, 'uncommitted');
        changed = h.request('GET', `/v1/data/${existing}`, { key: acc.adminKey });
        added = h.request('GET', `/v1/data/${id}`, { key: acc.adminKey });
        await ms(20);
        throw new Error('roll back');
      }),
      /roll back/,
    );
    const [a, b] = await Promise.all([changed!, added!]);
    assert.equal(a.status, 200);
    assert.equal(a.body.data.title, 'committed');
    assert.equal(b.status, 404);
  });

  it('hotFirst answers the one row or undefined, hotValue its one column or undefined', async () => {
    const { db, dialect } = h.database;
    const missing = 'dat_01HOTQUERYNOSUCHROW00001';
    assert.deepEqual(await firstOf(db, dialect, [acc.id, existing]), { id: existing, title: 'committed' });
    assert.equal(await firstOf(db, dialect, [acc.id, missing]), undefined);
    assert.equal(await titleOf(db, dialect, [acc.id, existing]), 'committed');
    assert.equal(await titleOf(db, dialect, [acc.id, missing]), undefined);
    // Another account's row is not found by its id alone.
    const other = await h.account();
    assert.equal(await titleOf(db, dialect, [other.id, existing]), undefined);
    // hotQuery over the same kind of statement still answers rows.
    assert.deepEqual(await readOne(db, dialect, [acc.id, existing]), [{ id: existing, title: 'committed' }]);
  });

  it('hotFirst and hotValue answer the same shapes inside a transaction and beside an open one', async () => {
    const { db, dialect } = h.database;
    const id = 'dat_01HOTQUERYSHAPESINTRX0001';
    let first: Promise<unknown> | undefined;
    let value: Promise<unknown> | undefined;
    await assert.rejects(
      db.transaction().execute(async (trx) => {
        await insert(trx, id, 'inside');
        assert.deepEqual(await firstOf(trx, dialect, [acc.id, id]), { id, title: 'inside' });
        assert.equal(await titleOf(trx, dialect, [acc.id, id]), 'inside');
        first = firstOf(db, dialect, [acc.id, id]);
        value = titleOf(db, dialect, [acc.id, existing]);
        await ms(20);
        throw new Error('roll back');
      }),
      /roll back/,
    );
    assert.equal(await first, undefined);
    assert.equal(await value, 'committed');
  });
});

// On SQLite a hot query keeps its prepared statement for the connection it last ran on; a process
// with two databases (the tests have many) must still read each one's own rows.
describe('hot queries over two SQLite databases in turn', () => {
  const epochOf = hotValue<number>('select v from auth_epoch where id = 1');
  const opened: { database: Database; drop: () => Promise<void> }[] = [];
  before(async () => {
    for (let i = 0; i < 2; i++) {
      const created = await createTestDatabase('sqlite');
      const database = openDatabase(created.config);
      await migrate(database);
      opened.push({ database, drop: created.drop });
    }
  });
  after(async () => {
    for (const { database, drop } of opened) {
      await database.close();
      await drop();
    }
  });

  it('reads the database it is given, each time', async () => {
    const [a, b] = opened.map((o) => o.database);
    await sql`update auth_epoch set v = 10 where id = 1`.execute(a!.db);
    await sql`update auth_epoch set v = 20 where id = 1`.execute(b!.db);
    for (let i = 0; i < 3; i++) {
      assert.equal(await epochOf(a!.db, 'sqlite', []), 10);
      assert.equal(await epochOf(b!.db, 'sqlite', []), 20);
    }
  });
});
