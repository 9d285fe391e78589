import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import { CompiledQuery, type Kysely, sql } from 'kysely';
import { migrate, openDatabase } from '../../src/db/database.ts';
import { up as listCovering } from '../../src/db/migrations/0023-list-covering.ts';
import { createAccount } from '../../src/modules/accounts/service.ts';
import {
  insertDataObject,
  listDataObjects,
  type Serialized,
  sqliteListSql,
} from '../../src/modules/data/repo.ts';
import { assertSqliteReplayChangesNothing, createTestDatabase } from '../helpers/databases.ts';
import { createHarness, describeEachDatabase, type Harness, type TestResponse } from '../helpers/harness.ts';
import { dataRow } from '../helpers/rows.ts';

interface Item {
  id: string;
  title: string;
  type: string;
  created_at: string;
}

const T0 = Date.parse('2026-03-01T12:00:00.000Z');

/** A fresh account holding one object per title, created `stepMs` apart from T0 (0: all at once). */
async function seed(h: Harness, titles: string[], stepMs = 1000) {
  const acc = await h.account('enterprise');
  const ids: string[] = [];
  for (const [i, title] of titles.entries()) {
    h.clock.now = T0 + i * stepMs;
    const res = await h.request('POST', '/v1/data', { key: acc.adminKey, body: { title, type: 'note' } });
    assert.equal(res.status, 201);
    ids.push(res.body.data.id);
  }
  h.clock.now = null;
  return { key: acc.adminKey, ids, accountId: acc.id };
}

function assertCounts(
  res: TestResponse,
  counts: { total: number; page: number; pages: number; limit: number },
) {
  assert.equal(res.status, 200, res.raw.slice(0, 300));
  for (const [k, v] of Object.entries(counts)) {
    assert.equal(res.body.data[k], v, `data.${k}`);
    assert.equal(res.body.meta[k], v, `meta.${k}`);
  }
}

function assertInvalid(res: TestResponse, field: string, query: string) {
  assert.equal(res.status, 400, `?${query}: ${res.raw.slice(0, 300)}`);
  assert.equal(res.body.error.code, 'invalid_request');
  assert.ok(
    res.body.error.details.some((d: { field: string }) => d.field === field),
    `details ${JSON.stringify(res.body.error.details)} name ${field}`,
  );
}

describeEachDatabase('data objects: listing, pagination and sort (decisions §2, §5)', (h) => {
  afterEach(() => {
    h.clock.now = null;
  });
  const list = async (key: string, query = '') =>
    h.request('GET', `/v1/data${query ? `?${query}` : ''}`, { key });
  const ids = (res: TestResponse) => res.body.data.items.map((i: Item) => i.id) as string[];

  it('answers an empty account with total 0, pages 0 and an empty array', async () => {
    const acc = await h.account('enterprise');
    const res = await list(acc.adminKey);
    assertCounts(res, { total: 0, page: 1, pages: 0, limit: 20 });
    assert.deepEqual(res.body.data.items, []);
  });

  it('pages by 20 by default, pages = ceil(total/limit), past the end is 200 and empty', async () => {
    const { key } = await seed(
      h,
      Array.from({ length: 25 }, (_, i) => `Item ${i}`),
    );
    const first = await list(key);
    assertCounts(first, { total: 25, page: 1, pages: 2, limit: 20 });
    assert.equal(first.body.data.items.length, 20);
    for (const item of first.body.data.items) {
      assert.deepEqual(Object.keys(item).sort(), ['created_at', 'id', 'title', 'type']);
    }
    const second = await list(key, 'page=2');
    assertCounts(second, { total: 25, page: 2, pages: 2, limit: 20 });
    assert.equal(second.body.data.items.length, 5);
    for (const [query, counts] of [
      ['page=3', { total: 25, page: 3, pages: 2, limit: 20 }],
      ['page=1000000&limit=100', { total: 25, page: 1_000_000, pages: 1, limit: 100 }],
    ] as const) {
      const past = await list(key, query);
      assertCounts(past, counts);
      assert.deepEqual(past.body.data.items, []);
    }
    assertCounts(await list(key, 'limit=1'), { total: 25, page: 1, pages: 25, limit: 1 });
    assertCounts(await list(key, 'limit=7&page=4'), { total: 25, page: 4, pages: 4, limit: 7 });
    const all = await list(key, 'limit=100');
    assertCounts(all, { total: 25, page: 1, pages: 1, limit: 100 });
    assert.equal(all.body.data.items.length, 25);
  });

  it('answers a page past the end from the total alone, without walking the list', async () => {
    const { accountId } = await seed(h, ['a', 'b', 'c', 'd', 'e'], 0);
    const opts = { sort: 'title', order: 'asc', limit: 2 } as const;
    // Every statement the list runs, seen through a transaction whose executeQuery records them.
    await h.database.db.transaction().execute(async (trx) => {
      const seen: string[] = [];
      const spy = new Proxy(trx, {
        get(target, prop) {
          if (prop === 'executeQuery') {
            return (q: CompiledQuery) => {
              seen.push(q.sql);
              return target.executeQuery(q);
            };
          }
          const value = Reflect.get(target, prop, target);
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
      const pageOf = async (offset: number) => {
        seen.length = 0;
        const page = await listDataObjects(spy, h.database.dialect, accountId, { ...opts, offset });
        const items = 'json' in page.items ? JSON.parse((page.items as Serialized).json) : page.items;
        return { titles: items.map((i: Item) => i.title), total: page.total, walked: seen.some(walks) };
      };
      const walks = (text: string) => /from data_objects where/i.test(text);
      assert.deepEqual(await pageOf(0), { titles: ['a', 'b'], total: 5, walked: true });
      assert.deepEqual(await pageOf(4), { titles: ['e'], total: 5, walked: true });
      assert.deepEqual(await pageOf(5), { titles: [], total: 5, walked: false });
      assert.deepEqual(await pageOf(9_007_199_254_740_900), { titles: [], total: 5, walked: false });
    });
  });

  it('refuses page and limit outside the rules with 400 invalid_request', async () => {
    const acc = await h.account('enterprise');
    for (const [query, field] of [
      ['page=0', 'page'],
      ['page=-1', 'page'],
      ['page=abc', 'page'],
      ['page=1.5', 'page'],
      ['page=', 'page'],
      ['page=1&page=2', 'page'],
      ['page=1&page=1', 'page'],
      ['limit=0', 'limit'],
      ['limit=-1', 'limit'],
      ['limit=101', 'limit'],
      ['limit=abc', 'limit'],
      ['limit=1.5', 'limit'],
      ['limit=', 'limit'],
      ['limit=5&limit=10', 'limit'],
    ] as const) {
      assertInvalid(await list(acc.adminKey, query), field, query);
    }
  });

  it('refuses integers written in any form but plain decimal digits', async () => {
    // "integer" in a URL means digits; 1e1, 0x10, 1.0, +5 and " 5" are other spellings a strict API
    // refuses rather than guesses at.
    const acc = await h.account('enterprise');
    for (const query of ['limit=1e1', 'limit=0x10', 'limit=1.0', 'limit=%2B5', 'limit=%205', 'page=0b1']) {
      assertInvalid(await list(acc.adminKey, query), query.split('=')[0] ?? '', query);
    }
  });

  it('refuses unknown query parameters and unknown sort or order values', async () => {
    const acc = await h.account('enterprise');
    for (const [query, field] of [
      ['foo=bar', 'foo'],
      ['q=report', 'q'],
      ['Page=1', 'Page'],
      ['sort=name', 'sort'],
      ['sort=DATE', 'sort'],
      ['sort=relevance', 'sort'],
      ['sort=', 'sort'],
      ['sort=date&sort=title', 'sort'],
      ['order=up', 'order'],
      ['order=ASC', 'order'],
      ['order=', 'order'],
    ] as const) {
      assertInvalid(await list(acc.adminKey, query), field, query);
    }
  });

  it('sorts by date newest first by default; order=asc reverses it', async () => {
    const { key, ids: created } = await seed(h, ['a', 'b', 'c', 'd', 'e']);
    const newestFirst = [...created].reverse();
    assert.deepEqual(ids(await list(key)), newestFirst);
    assert.deepEqual(ids(await list(key, 'sort=date')), newestFirst);
    assert.deepEqual(ids(await list(key, 'sort=date&order=desc')), newestFirst);
    assert.deepEqual(ids(await list(key, 'sort=date&order=asc')), created);
    assert.deepEqual(ids(await list(key, 'order=asc')), created);
    const items: Item[] = (await list(key)).body.data.items;
    assert.deepEqual(
      items.map((i) => i.created_at),
      [4, 3, 2, 1, 0].map((i) => new Date(T0 + i * 1000).toISOString()),
    );
  });

  it('sorts by title A to Z ignoring case; order=desc reverses it', async () => {
    const { key } = await seed(h, ['banana', 'Apple', 'cherry', 'apricot', 'Blueberry', 'avocado']);
    const az = ['Apple', 'apricot', 'avocado', 'banana', 'Blueberry', 'cherry'];
    const titles = (res: TestResponse) => res.body.data.items.map((i: Item) => i.title);
    assert.deepEqual(titles(await list(key, 'sort=title')), az);
    assert.deepEqual(titles(await list(key, 'sort=title&order=asc')), az);
    assert.deepEqual(titles(await list(key, 'sort=title&order=desc')), [...az].reverse());
  });

  it('breaks ties by id: walking every page with equal dates and titles never skips or repeats', async () => {
    // One instant for all, and only three distinct titles, so nearly every comparison is a tie.
    const titles = Array.from({ length: 23 }, (_, i) => ['same', 'Same', 'other'][i % 3] ?? 'same');
    const { key, ids: created } = await seed(h, titles, 0);
    for (const order of ['sort=date', 'sort=date&order=asc', 'sort=title', 'sort=title&order=desc']) {
      const whole = ids(await list(key, `${order}&limit=100`));
      assert.equal(whole.length, 23);
      for (const limit of [1, 4, 5, 22]) {
        const walked: string[] = [];
        const pages = Math.ceil(23 / limit);
        for (let page = 1; page <= pages; page++) {
          const res = await list(key, `${order}&limit=${limit}&page=${page}`);
          assertCounts(res, { total: 23, page, pages, limit });
          walked.push(...ids(res));
        }
        assert.deepEqual(walked, whole, `${order} limit=${limit}: pages are slices of one order`);
      }
      assert.deepEqual([...whole].sort(), [...created].sort(), `${order}: every object exactly once`);
    }
    const byDate = ids(await list(key, 'sort=date&limit=100'));
    assert.deepEqual(
      byDate,
      [...byDate].sort().reverse(),
      'equal dates: newest-first order falls back to id',
    );
  });

  it("lists only the caller's account", async () => {
    const mine = await seed(h, ['mine']);
    const theirs = await seed(h, ['theirs 1', 'theirs 2']);
    const res = await list(mine.key);
    assertCounts(res, { total: 1, page: 1, pages: 1, limit: 20 });
    assert.deepEqual(ids(res), mine.ids);
    assert.ok(!ids(res).some((id) => theirs.ids.includes(id)));
  });

  it('writes each item exactly as JSON.stringify would, whatever the title holds', async () => {
    // SQLite serialises the page itself (json_object); its escaping must be JSON.stringify's.
    let controls = '';
    for (let c = 1; c < 0x20; c++) controls += String.fromCharCode(c);
    const titles = [
      `quote " backslash \\ slash / ${controls} del \u007f`,
      'line and paragraph separators \u2028 \u2029, <script>&amp;',
      'héllo wörld 日本語 😀 \ufeff zero\u200bwidth',
    ];
    const { key, ids: created } = await seed(h, titles);
    for (const query of ['sort=date&order=asc', 'sort=title&order=asc', 'sort=title&order=desc&limit=2']) {
      const res = await list(key, query);
      assert.equal(res.status, 200, res.raw.slice(0, 300));
      // The whole answer is what JSON.stringify gives for the parsed answer: same escapes, same order.
      assert.equal(res.raw, JSON.stringify(res.body), query);
      for (const item of res.body.data.items as Item[]) {
        const one = await h.request('GET', `/v1/data/${item.id}`, { key });
        const { id, title, type, created_at } = one.body.data;
        assert.deepEqual(item, { id, title, type, created_at });
      }
    }
    const asc = await list(key, 'sort=date&order=asc');
    assert.deepEqual(
      asc.body.data.items.map((i: Item) => i.title),
      titles,
    );
    assert.deepEqual(ids(asc), created);
  });
});

describe('data objects: the SQLite list statement', () => {
  const h = createHarness('sqlite');
  before(() => h.setup());
  after(() => h.teardown());
  it('keeps LIMIT out of the plan and walks a covering index in order, never sorting', async () => {
    const acc = await h.account('enterprise');
    for (const sort of ['date', 'title'] as const) {
      for (const order of ['asc', 'desc'] as const) {
        const sql = sqliteListSql(sort, order);
        // A bare `limit ?` makes SQLite recompile the statement whenever the parameter is bound
        // (sqlite3ExprIsInteger marks it in the statement's expmask): once per request.
        assert.doesNotMatch(sql, /limit \?/i, `${sort} ${order}`);
        assert.match(sql, /limit \+\? offset \?/i, `${sort} ${order}`);
        const plan = await h.database.db.executeQuery<{ detail: string }>(
          CompiledQuery.raw(`explain query plan ${sql}`, [acc.id, acc.id, 20, 0]),
        );
        const details = plan.rows.map((r) => r.detail).join('\n');
        // Covering (migration 0023): the page's columns come from the index, never from the table.
        assert.match(
          details,
          sort === 'date'
            ? /USING COVERING INDEX data_objects_created_idx/
            : /USING COVERING INDEX data_objects_title_idx/,
          `${sort} ${order}`,
        );
        assert.doesNotMatch(details, /TEMP B-TREE/, `${sort} ${order}: no sort`);
      }
    }
  });
});

describe('migration 0023 (SQLite): the list indexes become covering', () => {
  it('rebuilds both indexes over the rows an earlier release wrote, with the same pages, once', async () => {
    const created = await createTestDatabase('sqlite');
    const database = openDatabase(created.config);
    try {
      await migrate(database, { to: '0022-vocab-trigrams' });
      const db = database.db as unknown as Kysely<unknown>;
      const { account } = await createAccount(database, { name: 'Old', adminEmail: 'old@example.com' });
      const titles = ['delta', 'Alpha', 'charlie', 'Bravo', 'echo', 'alpha', 'Foxtrot'];
      for (const [i, title] of titles.entries()) {
        const at = new Date(T0 + (i % 3) * 1000).toISOString();
        await insertDataObject(database.db, 'sqlite', dataRow(account.id, { title, created_at: at }));
      }
      const columns = async (index: string) =>
        (
          await sql<{ name: string }>`SELECT name FROM pragma_index_info(${index}) ORDER BY seqno`.execute(db)
        ).rows.map((r) => r.name);
      const pages = async () => {
        const out: unknown[] = [];
        for (const sort of ['date', 'title'] as const)
          for (const order of ['asc', 'desc'] as const)
            for (const offset of [0, 3]) {
              const page = await listDataObjects(database.db, 'sqlite', account.id, {
                sort,
                order,
                limit: 3,
                offset,
              });
              out.push([page.total, JSON.parse((page.items as Serialized).json)]);
            }
        return out;
      };
      assert.deepEqual(await columns('data_objects_title_idx'), ['account_id', 'title_sort', 'id']);
      const before = await pages();

      assert.deepEqual(await migrate(database, { to: '0023-list-covering' }), ['0023-list-covering']);
      assert.deepEqual(await columns('data_objects_created_idx'), [
        'account_id',
        'created_at',
        'id',
        'title',
        'type',
      ]);
      assert.deepEqual(await columns('data_objects_title_idx'), [
        'account_id',
        'title_sort',
        'id',
        'title',
        'type',
        'created_at',
      ]);
      assert.deepEqual(await pages(), before, 'every page the same, total included');

      // Run again (a replay after a crash), it finds its work done and rebuilds nothing.
      await assertSqliteReplayChangesNothing(db, listCovering);
    } finally {
      await database.close();
      await created.drop();
    }
  });
});
