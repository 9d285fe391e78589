import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CompiledQuery, type Kysely, sql } from 'kysely';
import { type Database, migrate, openDatabase } from '../../src/db/database.ts';
import type { DataObjectsTable } from '../../src/db/types.ts';
import { createAccount } from '../../src/modules/accounts/service.ts';
import { MAX_INDEXED_WORD_CHARS } from '../../src/search/document.ts';
import { infixLookup, lookupTrigrams } from '../../src/search/index-sqlite.ts';
import { expandWildcards, indexDataObject } from '../../src/search/search-index.ts';
import { createTestDatabase } from '../helpers/databases.ts';
import { createHarness, describeEachDatabase, type Harness, type TestAccount } from '../helpers/harness.ts';
import { dataRow } from '../helpers/rows.ts';
import { createNotes, foundIds } from './corpus.ts';

// Infix wildcards expand through the account's vocabulary, looked up by trigram: on SQLite the
// per-account rows of search_vocab_trigrams (migration 0022), on PostgreSQL pg_trgm. Every word,
// however long and in whatever script, is found by any run of three of its characters; a word no
// object holds any more is found by none, and on SQLite its trigram rows are gone with it.

const LETTERS = 'abcdefghijklmnopqrstuvwxyz';
/** A word of MAX_INDEXED_WORD_CHARS letters (the longest indexed) that no other test word shares. */
const LONGEST = Array.from({ length: MAX_INDEXED_WORD_CHARS }, (_, i) => LETTERS[(i * 7 + 3) % 26]).join('');

describe('lookupTrigrams', () => {
  it('takes the first, middle and last trigram of the run, distinct, by code point', () => {
    assert.deepEqual(lookupTrigrams('ab'), []);
    assert.deepEqual(lookupTrigrams('abc'), ['abc']);
    assert.deepEqual(lookupTrigrams('abcd'), ['abc', 'bcd']);
    assert.deepEqual(lookupTrigrams('abcdefg'), ['abc', 'cde', 'efg']);
    assert.deepEqual(lookupTrigrams('aaaaaa'), ['aaa']);
    assert.deepEqual(lookupTrigrams('𝔞𝔟𝔠'), ['𝔞𝔟𝔠']);
  });
});

/** The trigram rows the vocabulary implies, per account seq: what the table must hold exactly. */
async function expectedTrigrams(db: Kysely<unknown>): Promise<string[]> {
  const { rows } = await sql<{ seq: number; id: number; word: string }>`
    SELECT a.seq, v.id, v.word FROM search_vocab v JOIN search_accounts a ON a.account_id = v.account_id`.execute(
    db,
  );
  const out = new Set<string>();
  for (const r of rows) {
    const chars = Array.from(r.word);
    for (let i = 0; i + 3 <= chars.length; i++) out.add(`${r.seq} ${chars.slice(i, i + 3).join('')} ${r.id}`);
  }
  return [...out].sort();
}

async function storedTrigrams(db: Kysely<unknown>): Promise<string[]> {
  const { rows } = await sql<{ account_seq: number; trigram: string; vocab_id: number }>`
    SELECT account_seq, trigram, vocab_id FROM search_vocab_trigrams`.execute(db);
  return rows.map((r) => `${r.account_seq} ${r.trigram} ${r.vocab_id}`).sort();
}

const seqOf = async (db: Kysely<unknown>, accountId: string) =>
  (await sql<{ seq: number }>`SELECT seq FROM search_accounts WHERE account_id = ${accountId}`.execute(db))
    .rows[0]?.seq;

async function trigramRowsOf(db: Kysely<unknown>, accountId: string): Promise<number> {
  const seq = await seqOf(db, accountId);
  const { rows } = await sql<{ n: number }>`
    SELECT count(*) AS n FROM search_vocab_trigrams WHERE account_seq = ${seq ?? -1}`.execute(db);
  return Number(rows[0]!.n);
}

describeEachDatabase('search: infix wildcards through the vocabulary trigrams', (h: Harness) => {
  const db = () => h.database.db as unknown as Kysely<unknown>;
  let a: TestAccount;
  let b: TestAccount;
  let ids: Record<string, string>;

  it('finds any word by any three of its characters, in any script and at any length', async () => {
    a = await h.account('enterprise');
    b = await h.account('enterprise');
    ids = await createNotes(h, a, {
      latin: { title: 'Zurich office', content: `wanderlust aaaaaa ${LONGEST}` },
      cyrillic: { title: 'Привет', content: 'здравствуйте коллеги' },
      other: { title: 'Plain', content: 'nothing of the kind' },
    });
    await createNotes(h, b, { theirs: { title: 'Zurich too', content: 'wanderlust здравствуйте' } });
    const cases: [string, string[]][] = [
      ['*rich*', [ids.latin!]],
      ['*RICH*', [ids.latin!]],
      ['*nderl*', [ids.latin!]],
      ['*aaa*', [ids.latin!]],
      [`*${LONGEST.slice(-5)}*`, [ids.latin!]],
      [`*${LONGEST.slice(60, 64)}*`, [ids.latin!]],
      ['*равст*', [ids.cyrillic!]],
      ['*олле*', [ids.cyrillic!]],
      ['*ander*ust', [ids.latin!]],
      ['*xyzzy*', []],
    ];
    for (const [q, want] of cases) assert.deepEqual(await foundIds(h, a.adminKey, q), want.sort(), q);
    if (h.dialect === 'sqlite') assert.deepEqual(await storedTrigrams(db()), await expectedTrigrams(db()));
  });

  it("finds a word no more once no object holds it, and never another account's words", async () => {
    const res = await h.request('PATCH', `/v1/data/${ids.latin}`, {
      key: a.adminKey,
      body: { content: 'aaaaaa only' },
    });
    assert.equal(res.status, 200, res.raw);
    assert.deepEqual(await foundIds(h, a.adminKey, '*nderl*'), []);
    assert.deepEqual(await foundIds(h, a.adminKey, `*${LONGEST.slice(-5)}*`), []);
    assert.deepEqual(await foundIds(h, a.adminKey, '*rich*'), [ids.latin!], 'the title still holds Zurich');
    const del = await h.request('DELETE', `/v1/data/${ids.cyrillic}`, { key: a.adminKey });
    assert.equal(del.status, 204, del.raw);
    assert.deepEqual(await foundIds(h, a.adminKey, '*равст*'), []);
    // The other account still holds both words, and finds them; this one does not see them.
    assert.equal((await foundIds(h, b.adminKey, '*равст*')).length, 1);
    assert.equal((await foundIds(h, b.adminKey, '*nderl*')).length, 1);
    if (h.dialect !== 'sqlite') return;
    assert.deepEqual(await storedTrigrams(db()), await expectedTrigrams(db()));
    const { rows } = await sql<{ n: number }>`
      SELECT count(*) AS n FROM search_vocab_trigrams t
      WHERE t.account_seq = ${(await seqOf(db(), a.id))!} AND t.trigram IN ('нде', 'рав', 'лле')`.execute(
      db(),
    );
    assert.equal(Number(rows[0]!.n), 0, "the removed words' trigram rows are erased");
  });

  // PostgreSQL keeps no trigram rows of its own (pg_trgm indexes search_vocab.word).
  if (h.dialect !== 'sqlite') return;

  it('takes the trigram rows of a deleted account along with it, in either order of cascade', async () => {
    for (const searchAccountsFirst of [false, true]) {
      const c = await h.account('enterprise');
      await createNotes(h, c, { one: { title: 'Gone soon', content: 'ephemeral vocabulary entries' } });
      assert.ok((await trigramRowsOf(db(), c.id)) > 10);
      const seq = (await seqOf(db(), c.id))!;
      // Deleting the account cascades to search_accounts and search_vocab in an order SQLite picks.
      if (searchAccountsFirst)
        await sql`DELETE FROM search_accounts WHERE account_id = ${c.id}`.execute(db());
      await h.database.db.deleteFrom('accounts').where('id', '=', c.id).execute();
      const { rows } = await sql<{ n: number }>`
        SELECT count(*) AS n FROM search_vocab_trigrams WHERE account_seq = ${seq}`.execute(db());
      assert.equal(Number(rows[0]!.n), 0, `search_accounts first: ${searchAccountsFirst}`);
      assert.deepEqual(await storedTrigrams(db()), await expectedTrigrams(db()));
    }
  });
});

/** Inserts and indexes the row in one transaction, as a create does. */
async function insertIndexed(database: Database, row: DataObjectsTable): Promise<void> {
  await database.db.transaction().execute(async (trx) => {
    await trx.insertInto('data_objects').values(row).execute();
    await indexDataObject(trx, 'sqlite', row);
  });
}

describe('infixLookup (SQLite): the plan', () => {
  const h = createHarness('sqlite');
  before(() => h.setup());
  after(() => h.teardown());
  it("reads only the account's rows of each trigram, then each word by its id", async () => {
    const acc = await h.account('enterprise');
    const db = h.database.db;
    const compiled = infixLookup(acc.id, ['abc', 'bcd', 'cde'], '%abcde%', 129).compile(db);
    const plan = await db.executeQuery<{ detail: string }>(
      CompiledQuery.raw(`EXPLAIN QUERY PLAN ${compiled.sql}`, [...compiled.parameters]),
    );
    const details = plan.rows.map((r) => r.detail);
    const trigramReads = details.filter((d) => /search_vocab_trigrams/.test(d));
    assert.equal(trigramReads.length, 3, details.join('\n'));
    for (const d of trigramReads) assert.match(d, /PRIMARY KEY \(account_seq=\? AND trigram=\?\)/);
    // Each word found is read by its id, not by a walk of the account's vocabulary.
    assert.ok(details.includes('SEARCH v USING INTEGER PRIMARY KEY (rowid=?)'), details.join('\n'));
    assert.ok(!details.some((d) => /search_vocab_1|SCAN v\b/.test(d)), details.join('\n'));
  });
});

describe('migration 0022 (SQLite): per-account trigram rows replace the FTS5 trigram table', () => {
  it('fills the rows from the vocabulary an earlier release kept, and expands as expected', async () => {
    const created = await createTestDatabase('sqlite');
    const database = openDatabase(created.config);
    try {
      // The schema as the release before 0022 left it: the FTS5 trigram table of 0002.
      await migrate(database, { to: '0021-auth-epoch' });
      const db = database.db as unknown as Kysely<unknown>;
      const accounts: string[] = [];
      for (const name of ['Old A', 'Old B']) {
        const acc = await createAccount(database, {
          name,
          adminEmail: `${name.replace(' ', '')}@example.com`,
        });
        accounts.push(acc.account.id);
      }
      const [a, b] = accounts as [string, string];
      const contents: [string, string][] = [
        [a, 'espresso machines and wanderlust'],
        [a, 'Zürich здравствуйте quarterly'],
        [b, 'espresso elsewhere'],
      ];
      for (const [accountId, content] of contents)
        await insertIndexed(database, dataRow(accountId, { content }));
      const old = await sql<{ n: number }>`SELECT count(*) AS n FROM search_vocab_tri`.execute(db);
      assert.ok(Number(old.rows[0]!.n) >= 8, 'the earlier release indexed the words by trigram');

      const applied = await migrate(database, { to: '0022-vocab-trigrams' });
      assert.deepEqual(applied, ['0022-vocab-trigrams']);
      const { rows } = await sql<{ name: string }>`
        SELECT name FROM sqlite_master
        WHERE name IN ('search_vocab_tri', 'search_vocab_ai', 'search_vocab_ad') OR name GLOB 'search_vocab_tri_*'`.execute(
        db,
      );
      assert.deepEqual(rows, [], 'the FTS5 table, its shadow tables and its triggers are gone');
      assert.deepEqual(await storedTrigrams(db), await expectedTrigrams(db));
      assert.ok((await trigramRowsOf(db, a)) > 20);

      const expand = async (accountId: string, pattern: string) =>
        (await expandWildcards(database.db, 'sqlite', accountId, [pattern])).words.get(pattern);
      assert.deepEqual(await expand(a, '*spres*'), ['espresso']);
      assert.deepEqual(await expand(a, '*rich*'), ['zurich']);
      assert.deepEqual(await expand(a, '*равст*'), ['здравствуите']);
      assert.deepEqual(await expand(a, '*where*'), [], "another account's word");
      assert.deepEqual(await expand(b, '*where*'), ['elsewhere']);

      // And the triggers keep the rows from there.
      await insertIndexed(database, dataRow(a, { content: 'kaleidoscope' }));
      assert.deepEqual(await expand(a, '*eidosc*'), ['kaleidoscope']);
      assert.deepEqual(await storedTrigrams(db), await expectedTrigrams(db));
    } finally {
      await database.close();
      await created.drop();
    }
  });
});
