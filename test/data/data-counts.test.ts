import assert from 'node:assert/strict';
import { it } from 'node:test';
import { migrate, openDatabase } from '../../src/db/database.ts';
import { createAccount } from '../../src/modules/accounts/service.ts';
import { countDataObjects } from '../../src/modules/data/repo.ts';
import { createTestDatabase } from '../helpers/databases.ts';
import { describeEachDatabase, type Harness } from '../helpers/harness.ts';
import { dataRow } from '../helpers/rows.ts';

/** The `total` GET /data answers, checked against a real count(*) and the page counts. */
async function totalOf(h: Harness, key: string, accountId: string): Promise<number> {
  const res = await h.request('GET', '/v1/data?limit=7', { key });
  assert.equal(res.status, 200);
  const { total, pages } = res.body.data;
  assert.equal(res.body.meta.total, total);
  assert.equal(pages, Math.ceil(total / 7));
  const counted = await h.database.db
    .selectFrom('data_objects')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('account_id', '=', accountId)
    .executeTakeFirstOrThrow();
  assert.equal(total, Number(counted.n), 'total equals count(*)');
  return total;
}

const body = (i: number) => ({ title: `object ${i}`, type: 'note' });

const row = (accountId: string, i: number) => dataRow(accountId, { title: `seeded ${i}` });

describeEachDatabase('data objects: exact list totals from the counts table (migration 0006)', (h) => {
  it('keeps both accounts exact while their creates and deletes run concurrently', async () => {
    const a = await h.account('enterprise');
    const b = await h.account('enterprise');
    const create = (key: string, i: number) =>
      h.request('POST', '/v1/data', { key, body: body(i) }).then((r) => {
        assert.equal(r.status, 201, JSON.stringify(r.body));
        return r.body.data.id as string;
      });
    const firstA = await Promise.all(Array.from({ length: 30 }, (_, i) => create(a.adminKey, i)));
    const firstB = await Promise.all(Array.from({ length: 20 }, (_, i) => create(b.adminKey, i)));
    assert.equal(await totalOf(h, a.adminKey, a.id), 30);
    assert.equal(await totalOf(h, b.adminKey, b.id), 20);

    // Interleaved: creates and deletes of both accounts in flight at once, plus deletes of ids that
    // are already gone (404) and of the other account's ids (404), which must change nothing.
    const del = (key: string, id: string, expected: number) =>
      h.request('DELETE', `/v1/data/${id}`, { key }).then((r) => assert.equal(r.status, expected));
    const work: Promise<unknown>[] = [];
    for (let i = 0; i < 40; i++) {
      work.push(create(a.adminKey, 100 + i));
      if (i < 25) work.push(create(b.adminKey, 100 + i));
      if (i < 12) work.push(del(a.adminKey, firstA[i]!, 204));
      if (i < 15) work.push(del(b.adminKey, firstB[i]!, 204));
      if (i < 5) work.push(del(b.adminKey, firstA[20 + i]!, 404));
    }
    await Promise.all(work);
    await Promise.all([del(a.adminKey, firstA[0]!, 404), del(b.adminKey, firstB[0]!, 404)]);
    assert.equal(await totalOf(h, a.adminKey, a.id), 30 + 40 - 12);
    assert.equal(await totalOf(h, b.adminKey, b.id), 20 + 25 - 15);
  });

  it('counts rows written outside the API, in parallel transactions touching both accounts', async () => {
    const a = await h.account('enterprise');
    const b = await h.account('enterprise');
    // On PostgreSQL each transaction holds its own pooled connection: truly concurrent writers.
    await Promise.all(
      Array.from({ length: 6 }, (_, t) =>
        h.database.db.transaction().execute(async (trx) => {
          for (let i = 0; i < 5; i++) {
            await trx
              .insertInto('data_objects')
              .values(row(a.id, t * 10 + i))
              .execute();
            await trx
              .insertInto('data_objects')
              .values(row(b.id, t * 10 + i))
              .execute();
          }
          if (t % 2 === 0) {
            await trx
              .deleteFrom('data_objects')
              .where('account_id', '=', b.id)
              .where('title', '=', `seeded ${t * 10}`)
              .execute();
          }
        }),
      ),
    );
    // A rolled-back transaction leaves no trace in the counts.
    await assert.rejects(
      h.database.db.transaction().execute(async (trx) => {
        await trx.insertInto('data_objects').values(row(a.id, 999)).execute();
        throw new Error('roll back');
      }),
      /roll back/,
    );
    assert.equal(await totalOf(h, a.adminKey, a.id), 30);
    assert.equal(await totalOf(h, b.adminKey, b.id), 30 - 3);
    if (h.dialect === 'postgres') {
      // Concurrent sessions wrote to their own stripes instead of queueing on one row.
      const stripes = await h.database.db
        .selectFrom('data_object_counts')
        .select('stripe')
        .where('account_id', '=', a.id)
        .execute();
      assert.ok(stripes.length > 1, `stripes used: ${stripes.length}`);
    }
  });

  it('answers 0 for an account that never held an object, and after its last one is deleted', async () => {
    const a = await h.account('enterprise');
    assert.equal(await totalOf(h, a.adminKey, a.id), 0);
    const created = await h.request('POST', '/v1/data', { key: a.adminKey, body: body(1) });
    assert.equal(await totalOf(h, a.adminKey, a.id), 1);
    await h.request('DELETE', `/v1/data/${created.body.data.id}`, { key: a.adminKey });
    assert.equal(await totalOf(h, a.adminKey, a.id), 0);
  });

  it('backfills the counts when it upgrades a database that already holds objects', async () => {
    const created = await createTestDatabase(h.dialect);
    const database = openDatabase(created.config);
    try {
      await migrate(database, { to: '0005-idempotency' });
      const accounts = [];
      for (const name of ['Old A', 'Old B', 'Old C']) {
        const acc = await createAccount(database, {
          name,
          adminEmail: `${name.replace(' ', '')}@example.com`,
        });
        accounts.push(acc.account.id);
      }
      const [a, b, c] = accounts as [string, string, string];
      const rows = [
        ...Array.from({ length: 7 }, (_, i) => row(a, i)),
        ...Array.from({ length: 3 }, (_, i) => row(b, i)),
      ];
      await database.db.insertInto('data_objects').values(rows).execute();
      const applied = await migrate(database);
      assert.ok(applied.includes('0006-data-counts'), `applied ${applied}`);
      assert.equal(await countDataObjects(database.db, database.dialect, a), 7);
      assert.equal(await countDataObjects(database.db, database.dialect, b), 3);
      assert.equal(await countDataObjects(database.db, database.dialect, c), 0);
      // And the triggers keep them from there.
      await database.db.insertInto('data_objects').values(row(c, 1)).execute();
      await database.db
        .deleteFrom('data_objects')
        .where('account_id', '=', a)
        .where('title', '=', 'seeded 0')
        .execute();
      assert.equal(await countDataObjects(database.db, database.dialect, a), 6);
      assert.equal(await countDataObjects(database.db, database.dialect, c), 1);
    } finally {
      await database.close();
      await created.drop();
    }
  });
});
