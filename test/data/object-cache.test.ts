import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { openDatabase } from '../../src/db/database.ts';
import { ObjectJsonCache, objectCacheOf } from '../../src/modules/data/object-cache.ts';
import { readDataVersion } from '../../src/modules/data/repo.ts';
import { createHarness, describeEachDatabase } from '../helpers/harness.ts';

/**
 * `GET /data/{id}` answers objects it read before from memory on SQLite while their account's data
 * version (migration 0029) has not moved; every change made anywhere (this process, another
 * connection as another process or the CLI would make it, plain SQL) applies on the next request.
 */
describeEachDatabase('GET /data/{id}: objects read before, and changes made elsewhere', (h) => {
  const create = async (key: string, title: string) => {
    const res = await h.request('POST', '/v1/data', { key, body: { title, type: 'note', content: 'x' } });
    assert.equal(res.status, 201);
    return res.body.data.id as string;
  };
  const title = async (key: string, id: string) => {
    const res = await h.request('GET', `/v1/data/${id}`, { key });
    return res.status === 200 ? (res.body.data.title as string) : res.status;
  };

  it('applies changes committed over another connection on the next request', async () => {
    const acc = await h.account('enterprise');
    const id = await create(acc.adminKey, 'first');
    assert.equal(await title(acc.adminKey, id), 'first');
    assert.equal(await title(acc.adminKey, id), 'first');
    const other = openDatabase(h.config.database);
    try {
      const set = (t: string) =>
        sql`update data_objects set title = ${t} where account_id = ${acc.id} and id = ${id}`.execute(
          other.db,
        );
      await set('second');
      assert.equal(await title(acc.adminKey, id), 'second', 'an update elsewhere');
      await set('third');
      assert.equal(await title(acc.adminKey, id), 'third', 'a second one');
      await sql`delete from data_objects where account_id = ${acc.id} and id = ${id}`.execute(other.db);
      assert.equal(await title(acc.adminKey, id), 404, 'deleted elsewhere');
    } finally {
      await other.close();
    }
  });

  it('applies changes made through the API, and keeps accounts apart', async () => {
    const a = await h.account('enterprise');
    const b = await h.account('enterprise');
    const id = await create(a.adminKey, 'mine');
    assert.equal(await title(a.adminKey, id), 'mine');
    assert.equal(await title(b.adminKey, id), 404, "another account's key");
    const patch = await h.request('PATCH', `/v1/data/${id}`, { key: a.adminKey, body: { title: 'patched' } });
    assert.equal(patch.status, 200);
    assert.equal(await title(a.adminKey, id), 'patched');
    assert.equal((await h.request('DELETE', `/v1/data/${id}`, { key: a.adminKey })).status, 204);
    assert.equal(await title(a.adminKey, id), 404);
  });
});

// SQLite only: PostgreSQL reads the object on every request, and has no version counter.
describe('the account data version (migration 0029) [sqlite]', () => {
  const h = createHarness('sqlite');
  before(() => h.setup());
  after(() => h.teardown());
  const create = async (key: string, title: string) => {
    const res = await h.request('POST', '/v1/data', { key, body: { title, type: 'note', content: 'x' } });
    assert.equal(res.status, 201);
    return res.body.data.id as string;
  };

  it('raises the account version on every create, change and delete, whoever writes', async () => {
    const acc = await h.account('enterprise');
    const version = () => readDataVersion(h.database.db, acc.id);
    const v0 = await version();
    const id = await create(acc.adminKey, 'one');
    const v1 = await version();
    assert.ok(v1 !== undefined && (v0 === undefined || v1 > v0));
    await sql`update data_objects set content = 'y' where account_id = ${acc.id} and id = ${id}`.execute(
      h.database.db,
    );
    const v2 = (await version())!;
    assert.ok(v2 > v1!);
    await sql`delete from data_objects where account_id = ${acc.id} and id = ${id}`.execute(h.database.db);
    assert.ok((await version())! > v2);
    // The answer from memory is the bytes of the one read from the database.
    const again = await create(acc.adminKey, 'two');
    const first = await h.request('GET', `/v1/data/${again}`, { key: acc.adminKey });
    assert.ok(objectCacheOf(h.database.db).size > 0);
    const second = await h.request('GET', `/v1/data/${again}`, { key: acc.adminKey });
    assert.equal(JSON.stringify(second.body.data), JSON.stringify(first.body.data));
  });

  it('deleting an account with objects leaves no version row', async () => {
    const acc = await h.account('enterprise');
    await create(acc.adminKey, 'gone');
    await sql`delete from accounts where id = ${acc.id}`.execute(h.database.db);
    assert.equal(await readDataVersion(h.database.db, acc.id), undefined);
  });
});

describe('ObjectJsonCache', () => {
  it('answers only under the version an entry was filed under', () => {
    const c = new ObjectJsonCache();
    const k = ObjectJsonCache.key('acc', 'id');
    c.set(k, 3, '{"a":1}');
    assert.equal(c.get(k, 3), '{"a":1}');
    assert.equal(c.get(k, 4), undefined);
    assert.equal(c.get(ObjectJsonCache.key('other', 'id'), 3), undefined);
  });

  it('stays within its bound, dropping the oldest first, and keeps no oversized entry', () => {
    const c = new ObjectJsonCache(10, 6);
    c.set('a', 1, 'aaaa');
    c.set('b', 1, 'bbbb');
    c.set('c', 1, 'cccc');
    assert.equal(c.get('a', 1), undefined);
    assert.equal(c.get('b', 1), 'bbbb');
    assert.equal(c.get('c', 1), 'cccc');
    assert.ok(c.chars <= 10);
    c.set('b', 2, 'toolong');
    assert.equal(c.get('b', 1), undefined, 'the old entry goes too');
    assert.equal(c.get('b', 2), undefined);
    assert.equal(c.chars, 4);
  });
});
