import assert from 'node:assert/strict';
import { after, before, describe, it, test } from 'node:test';
import type { Kysely } from 'kysely';
import { sql } from 'kysely';
import { up as migrate0012 } from '../../src/db/migrations/0012-title-sort.ts';
import {
  CANDIDATES,
  up as migrate0027,
  rekeyTitles,
  sortKeyAfter0027,
} from '../../src/db/migrations/0027-title-sort-letters.ts';
import { titleSortKey } from '../../src/lib/sort-key.ts';
import { postgresSkipReason } from '../helpers/databases.ts';
import { createHarness, describeEachDatabase, type Harness, type TestAccount } from '../helpers/harness.ts';

// decisions §5: sort=title is "A to Z, case-insensitive"; accents and compatibility forms (here a
// full-width F) sort with their plain letters.
const TITLES = ['Zoo', 'Äpfel', 'apple', 'Banana', 'Ｆull moon', 'éclair', 'Eclipse'];
const AZ = ['Äpfel', 'apple', 'Banana', 'éclair', 'Eclipse', 'Ｆull moon', 'Zoo'];

/**
 * An enterprise account holding one note per title, all with the word `word` (so search finds
 * them all), made before the suite's tests; and the titles as GET /data and GET /search list them.
 */
function seedTitles(h: Harness, titles: readonly string[], word: string) {
  const seeded = {
    acc: undefined as unknown as TestAccount,
    idOf: new Map<string, string>(),
    listed: async (order = 'asc') =>
      (
        await h.request('GET', `/v1/data?sort=title&order=${order}&limit=100`, { key: seeded.acc.adminKey })
      ).body.data.items.map((i: { title: string }) => i.title) as string[],
    searched: async (order = 'asc') =>
      (
        await h.request('GET', `/v1/search?q=${word}&sort=title&order=${order}&limit=100`, {
          key: seeded.acc.adminKey,
        })
      ).body.data.results.map((r: { title: string }) => r.title) as string[],
  };
  before(async () => {
    seeded.acc = await h.account('enterprise');
    for (const title of titles) {
      const res = await h.request('POST', '/v1/data', {
        key: seeded.acc.adminKey,
        body: { title, type: 'note', content: word },
      });
      assert.equal(res.status, 201, res.raw);
      seeded.idOf.set(title, res.body.data.id);
    }
  });
  return seeded;
}

describeEachDatabase('sort=title ignores accents and compatibility forms', (h) => {
  const seeded = seedTitles(h, TITLES, 'fruitbowl');
  const { idOf, listed, searched } = seeded;

  it('orders GET /data and GET /search by the folded title', async () => {
    assert.deepEqual(await listed(), AZ);
    assert.deepEqual(await searched(), AZ);
    const desc = await h.request('GET', '/v1/data?sort=title&order=desc&limit=100', {
      key: seeded.acc.adminKey,
    });
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
          WHERE account_id = ${seeded.acc.id} AND id = ${idOf.get(title)}`.execute(db);
      }
    }
    assert.notDeepEqual(await listed(), AZ, 'the old keys put accented titles after Z');
    await migrate0012(db, h.dialect);
    for (const table of ['data_objects', 'search_documents']) {
      const { rows } = await sql<{ id: string; title_sort: string }>`
        SELECT id, title_sort FROM ${sql.table(table)} WHERE account_id = ${seeded.acc.id}`.execute(db);
      const keys = new Map(rows.map((r) => [r.id, r.title_sort]));
      for (const title of TITLES) assert.equal(keys.get(idOf.get(title)!), titleSortKey(title), table);
    }
    assert.deepEqual(await listed(), AZ);
    assert.deepEqual(await searched(), AZ);
  });
});

// Letters with a stroke and ligatures, which NFKD leaves whole, sort as their base letters, as
// search folds them (docs/search.md: `strasse` finds `Straße`, `lodz` finds `Łódź`): before 0027
// they sorted after `z`. Greek final sigma is `σ` (a word-final `Σ` lower-cases to `ς`).
const STROKED_TITLES = [
  'Zoo',
  'Łódź',
  'Lublin',
  'Æsir',
  'Aesop',
  'Øresund',
  'Oslo',
  'Straße',
  'Strasz',
  'ΝΟΜΟΣ',
  'Σοφία',
];
const STROKED_AZ = [
  'Æsir',
  'Aesop',
  'Łódź',
  'Lublin',
  'Øresund',
  'Oslo',
  'Straße',
  'Strasz',
  'Zoo',
  'ΝΟΜΟΣ',
  'Σοφία',
];
/** The order of 0012's keys (src/lib/sort-key.ts before 0027), as the review found it. */
const BEFORE_0027 = [
  'Aesop',
  'Lublin',
  'Oslo',
  'Strasz',
  'Straße',
  'Zoo',
  'Æsir',
  'Øresund',
  'Łódź',
  'ΝΟΜΟΣ',
  'Σοφία',
];
/** src/lib/sort-key.ts `titleSortKey` from 0012 until 0027. */
const keyBefore0027 = (title: string) =>
  title
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '')
    .toLowerCase();

describeEachDatabase('sort=title reads letters with a stroke and ligatures as their base letters', (h) => {
  const seeded = seedTitles(h, STROKED_TITLES, 'placenames');
  const { idOf, listed, searched } = seeded;
  const db = () => h.database.db as unknown as Kysely<unknown>;
  const keys = async (table: string) => {
    const { rows } = await sql<{ id: string; title_sort: string }>`
      SELECT id, title_sort FROM ${sql.table(table)} WHERE account_id = ${seeded.acc.id}`.execute(db());
    const byId = new Map(rows.map((r) => [r.id, r.title_sort]));
    return new Map(STROKED_TITLES.map((t) => [t, byId.get(idOf.get(t)!)]));
  };
  const setKey = async (title: string, key: string) => {
    for (const table of ['data_objects', 'search_documents']) {
      await sql`UPDATE ${sql.table(table)} SET title_sort = ${key}
        WHERE account_id = ${seeded.acc.id} AND id = ${idOf.get(title)}`.execute(db());
    }
  };

  it('orders GET /data and GET /search A to Z, both ways', async () => {
    assert.deepEqual(await listed(), STROKED_AZ);
    assert.deepEqual(await searched(), STROKED_AZ);
    assert.deepEqual(await listed('desc'), [...STROKED_AZ].reverse());
    assert.deepEqual(await searched('desc'), [...STROKED_AZ].reverse());
  });

  it('migration 0027 gives rows written before it the new key, in both tables, once', async () => {
    const { rows: ran } = await sql<{ name: string }>`
      SELECT name FROM kysely_migration WHERE name = '0027-title-sort-letters'`.execute(db());
    assert.equal(ran.length, 1, 'registered, and run by migrate');
    // Rows as releases before 0027 wrote them.
    for (const title of STROKED_TITLES) await setKey(title, keyBefore0027(title));
    assert.deepEqual(await listed(), BEFORE_0027, 'the old keys put Æ, Ø, Ł and ß after z');
    assert.deepEqual(await searched(), BEFORE_0027);
    // An ASCII title is never read: a key it could not have had stays as it is.
    await setKey('Zoo', 'zoo (untouched)');
    const { rows: counted } = await sql<{ n: number }>`SELECT count(*) AS n FROM data_objects`.execute(db());
    const objects = Number(counted[0]!.n);
    let reports = 0;
    const changed = await rekeyTitles(db(), h.dialect, { window: 2, onBatch: () => reports++ });
    // Łódź, Æsir, Øresund, Straße and ΝΟΜΟΣ; Σοφία is read (Σ) but its key is the same.
    assert.equal(changed, 5);
    assert.equal(reports, Math.floor(objects / 2) + 1, 'one report per window of 2 objects');
    for (const table of ['data_objects', 'search_documents']) {
      const now = await keys(table);
      for (const title of STROKED_TITLES) {
        assert.equal(
          now.get(title),
          title === 'Zoo' ? 'zoo (untouched)' : titleSortKey(title),
          `${table} ${title}`,
        );
      }
    }
    await setKey('Zoo', 'zoo');
    assert.deepEqual(await listed(), STROKED_AZ);
    assert.deepEqual(await searched(), STROKED_AZ);
    // Run again (a replay after a crash), it finds every key right.
    const before = [await keys('data_objects'), await keys('search_documents')];
    assert.equal(await rekeyTitles(db(), h.dialect), 0);
    await migrate0027(db(), h.dialect);
    assert.deepEqual([await keys('data_objects'), await keys('search_documents')], before);
  });
});

test("migration 0027's frozen key is this release's, and it reads every title whose key it changes", () => {
  const candidate = new RegExp(`[${CANDIDATES}]`, 'u');
  for (let cp = 0x80; cp <= 0x10ffff; cp++) {
    if (cp >= 0xd800 && cp <= 0xdfff) continue;
    const c = String.fromCodePoint(cp);
    // After a letter, as a word-final `Σ` (lower-cased to `ς`) needs.
    for (const title of [c, `a${c}`]) {
      const key = sortKeyAfter0027(title);
      assert.equal(key, titleSortKey(title), `U+${cp.toString(16)}`);
      if (!candidate.test(title)) assert.equal(key, keyBefore0027(title), `U+${cp.toString(16)}`);
    }
  }
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
