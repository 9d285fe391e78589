import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import { sql } from 'kysely';
import { hotQuery } from '../../src/db/database.ts';
import { describeEachDatabase, type TestAccount } from '../helpers/harness.ts';

// hotQuery runs a statement straight on SQLite's one connection when no transaction is open on it
// (src/db/database.ts). Those reads must never see a write that an open transaction has not
// committed: on that same connection they would, unless they wait for Kysely's connection mutex.

const readOne = hotQuery<{ id: string; title: string }>(
  'select id, title from data_objects where account_id = ? and id = ?',
);
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
});
