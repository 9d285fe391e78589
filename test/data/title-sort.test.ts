import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Kysely } from 'kysely';
import { sql } from 'kysely';
import { up as migrate0012 } from '../../src/db/migrations/0012-title-sort.ts';
import { titleSortKey } from '../../src/lib/sort-key.ts';
import { postgresSkipReason } from '../helpers/databases.ts';
import { createHarness, describeEachDatabase, type TestAccount } from '../helpers/harness.ts';

// decisions §5: sort=title is "A to Z, case-insensitive"; accents and compatibility forms (here a
// full-width F) sort with their plain letters.
const TITLES = ['Zoo', 'Äpfel', 'apple', 'Banana', 'Ｆull moon', 'éclair', 'Eclipse'];
const AZ = ['Äpfel', 'apple', 'Banana', 'éclair', 'Eclipse', 'Ｆull moon', 'Zoo'];

describeEachDatabase('sort=title ignores accents and compatibility forms', (h) => {
  let acc: TestAccount;
  const idOf = new Map<string, string>();
  before(async () => {
    acc = await h.account('enterprise');
    for (const title of TITLES) {
      const res = await h.request('POST', '/v1/data', {
        key: acc.adminKey,
        body: { title, type: 'note', content: 'fruitbowl' },
      });
      assert.equal(res.status, 201, res.raw);
      idOf.set(title, res.body.data.id);
    }
  });

  const listed = async () =>
    (await h.request('GET', '/v1/data?sort=title&limit=100', { key: acc.adminKey })).body.data.items.map(
      (i: { title: string }) => i.title,
    );
  const searched = async () =>
    (
      await h.request('GET', '/v1/search?q=fruitbowl&sort=title&limit=100', { key: acc.adminKey })
    ).body.data.results.map((r: { title: string }) => r.title);

  it('orders GET /data and GET /search by the folded title', async () => {
    assert.deepEqual(await listed(), AZ);
    assert.deepEqual(await searched(), AZ);
    const desc = await h.request('GET', '/v1/data?sort=title&order=desc&limit=100', { key: acc.adminKey });
    assert.deepEqual(
      desc.body.data.items.map((i: { title: string }) => i.title),
      [...AZ].reverse(),
    );
  });

  it('migration 0012 gives rows written before it the folded key, in both tables', async () => {
    const db = h.database.db as unknown as Kysely<unknown>;
    // Rows as the code before 0012 wrote them: the title lower-cased.
    for (const title of TITLES) {
      for (const table of ['data_objects', 'search_documents']) {
        await sql`UPDATE ${sql.table(table)} SET title_sort = ${title.toLowerCase()}
          WHERE account_id = ${acc.id} AND id = ${idOf.get(title)}`.execute(db);
      }
    }
    assert.notDeepEqual(await listed(), AZ, 'the old keys put accented titles after Z');
    await migrate0012(db, h.dialect);
    for (const table of ['data_objects', 'search_documents']) {
      const { rows } = await sql<{ id: string; title_sort: string }>`
        SELECT id, title_sort FROM ${sql.table(table)} WHERE account_id = ${acc.id}`.execute(db);
      const keys = new Map(rows.map((r) => [r.id, r.title_sort]));
      for (const title of TITLES) assert.equal(keys.get(idOf.get(title)!), titleSortKey(title), table);
    }
    assert.deepEqual(await listed(), AZ);
    assert.deepEqual(await searched(), AZ);
  });
});

// Punctuation is where language collations and code point order part: ICU en-US puts `a_c`
// before `a-c` and `a.b`; SQLite's BINARY (code point) puts it after `a1`. PostgreSQL runs here on
// an ICU database, as many deployments' are, and must still agree with SQLite.
const PUNCTUATED = ['a_c', 'aB', 'a-c', 'a1', 'a c', 'a~c', 'aa', 'a.b'];
const BY_CODE_POINT = [...PUNCTUATED].sort((x, y) => (titleSortKey(x) < titleSortKey(y) ? -1 : 1));

for (const dialect of ['sqlite', 'postgres'] as const) {
  const skip = dialect === 'postgres' ? postgresSkipReason() : false;
  describe(`sort=title is code point order whatever the database's collation [${dialect}]`, { skip }, () => {
    const h = createHarness(dialect, {}, { icuLocale: 'en-US' });
    let acc: TestAccount;
    before(async () => {
      await h.setup();
      acc = await h.account('enterprise');
      for (const title of PUNCTUATED) {
        const res = await h.request('POST', '/v1/data', {
          key: acc.adminKey,
          body: { title, type: 'note', content: 'punctuated' },
        });
        assert.equal(res.status, 201, res.raw);
      }
    });
    after(() => h.teardown());

    it('lists and searches in the same order on both databases', async () => {
      assert.deepEqual(BY_CODE_POINT, ['a c', 'a-c', 'a.b', 'a1', 'a_c', 'aa', 'aB', 'a~c']);
      const list = await h.request('GET', '/v1/data?sort=title&limit=100', { key: acc.adminKey });
      assert.deepEqual(
        list.body.data.items.map((i: { title: string }) => i.title),
        BY_CODE_POINT,
      );
      const search = await h.request('GET', '/v1/search?q=punctuated&sort=title&limit=100', {
        key: acc.adminKey,
      });
      assert.deepEqual(
        search.body.data.results.map((r: { title: string }) => r.title),
        BY_CODE_POINT,
      );
    });
  });
}
