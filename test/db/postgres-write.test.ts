import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { type Database, migrate, openDatabase } from '../../src/db/database.ts';
import { beforeCommit, inBatch } from '../../src/db/group-commit.ts';
import { newId } from '../../src/lib/ids.ts';
import { titleSortKey } from '../../src/lib/sort-key.ts';
import { createAccount } from '../../src/modules/accounts/service.ts';
import { type DataRow, insertDataObject } from '../../src/modules/data/repo.ts';
import { indexDataObject, reindexDataObject, unindexDataObject } from '../../src/search/search-index.ts';
import { whileOpen } from '../helpers/concurrency.ts';
import { createTestDatabase, postgresSkipReason } from '../helpers/databases.ts';

/**
 * On PostgreSQL every write is its own transaction, run as a batch of one: the search vocabulary
 * upsert (whose row locks every writer to the account wants for the common words) is deferred to
 * the end, so a write holds those locks only until its COMMIT, not while it does the rest.
 */
describe('PostgreSQL writes: vocabulary locks are taken last', { skip: postgresSkipReason() }, () => {
  let database: Database;
  let drop: () => Promise<void>;
  let accountId: string;

  const object = (title: string): DataRow => ({
    account_id: accountId,
    id: newId('data'),
    title,
    title_sort: titleSortKey(title),
    type: 'document',
    content: 'quarterly revenue grew across every region',
    tags: '[]',
    metadata: '{}',
    created_at: new Date().toISOString(),
    updated_at: null,
  });
  const docsOf = async (word: string) =>
    (
      await sql<{
        docs: number;
      }>`SELECT sum(docs)::int AS docs FROM search_vocab WHERE account_id = ${accountId} AND word = ${word}
        GROUP BY word`.execute(database.db)
    ).rows[0]?.docs;

  before(async () => {
    const created = await createTestDatabase('postgres');
    drop = created.drop;
    database = openDatabase(created.config);
    await migrate(database);
    accountId = (await createAccount(database, { name: 'Locks', adminEmail: 'locks@example.com' })).account
      .id;
  });
  after(async () => {
    await database?.close();
    await drop?.();
  });

  it('runs work deferred with beforeCommit after the write, inside its transaction', async () => {
    const order: string[] = [];
    await database.write(async (trx) => {
      assert.equal(inBatch(trx), true);
      await beforeCommit(trx, 'probe', async () => {
        order.push('deferred');
      });
      order.push('write');
    });
    assert.deepEqual(order, ['write', 'deferred']);
  });

  it('lets a write with the same words commit while an earlier one that indexed is still open', async () => {
    const outcome = await whileOpen(
      (hold) =>
        database.write(async (trx) => {
          const row = object('First report');
          await insertDataObject(trx, 'postgres', row);
          await indexDataObject(trx, 'postgres', row);
          await hold(); // the rest of a longer write: events, deliveries, ...
        }),
      () =>
        database.write(async (trx) => {
          const row = object('Second report');
          await insertDataObject(trx, 'postgres', row);
          await indexDataObject(trx, 'postgres', row);
        }),
    );
    assert.equal(outcome, 'committed', 'the second write waited for the first one to commit');
    assert.equal(await docsOf('revenue'), 2, 'both writes counted once in the vocabulary');
    assert.equal(await docsOf('report'), 2);
  });
});

/**
 * Migration 0018: a word's count is spread over stripes, so writers of one account that share
 * words (every object holds "the") do not queue on one row each; counts stay exact and a word no
 * object holds has no rows.
 */
describe('PostgreSQL writes: the vocabulary is striped', { skip: postgresSkipReason() }, () => {
  let database: Database;
  let drop: () => Promise<void>;
  let accountId: string;

  const apply = (db: Database['db'], delta: Record<string, number>, stripe: number) =>
    sql`SELECT search_vocab_apply(${accountId}, ${JSON.stringify(delta)}::jsonb, ${stripe}::smallint)`.execute(
      db,
    );
  const rowsOf = async (word: string) =>
    (
      await sql<{ stripe: number; docs: number }>`
        SELECT stripe, docs FROM search_vocab WHERE account_id = ${accountId} AND word = ${word}
        ORDER BY stripe`.execute(database.db)
    ).rows.map((r) => [r.stripe, r.docs]);

  before(async () => {
    const created = await createTestDatabase('postgres');
    drop = created.drop;
    database = openDatabase(created.config);
    await migrate(database);
    accountId = (await createAccount(database, { name: 'Stripes', adminEmail: 'stripes@example.com' }))
      .account.id;
  });
  after(async () => {
    await database?.close();
    await drop?.();
  });

  it('lets a writer on another stripe add to a word whose row an open transaction holds', async () => {
    const outcome = await whileOpen(
      (hold) =>
        database.db.transaction().execute(async (trx) => {
          await apply(trx, { stripeshared: 1 }, 1);
          await hold();
        }),
      () => database.db.transaction().execute((trx) => apply(trx, { stripeshared: 1 }, 2)),
    );
    assert.equal(outcome, 'committed', 'the writer on stripe 2 waited for the one on stripe 1');
    assert.deepEqual(await rowsOf('stripeshared'), [
      [1, 1],
      [2, 1],
    ]);
  });

  it('takes a removal from rows above zero, own stripe first, and deletes the rows it empties', async () => {
    await apply(database.db, { takeword: 2 }, 5);
    await apply(database.db, { takeword: 1 }, 7);
    await apply(database.db, { takeword: -1 }, 7);
    assert.deepEqual(await rowsOf('takeword'), [[5, 2]], 'its own stripe first');
    await apply(database.db, { takeword: -1 }, 3);
    assert.deepEqual(await rowsOf('takeword'), [[5, 1]], 'another stripe when its own has none');
    await apply(database.db, { takeword: 1, other: 1 }, 9);
    await apply(database.db, { takeword: -2, other: -1 }, 3);
    assert.deepEqual(await rowsOf('takeword'), [], 'a word no object holds has no rows');
    assert.deepEqual(await rowsOf('other'), []);
  });

  it('keeps counts exact through concurrent creates, updates and deletes sharing words', async () => {
    const rows = Array.from({ length: 40 }, (_, i) => ({
      account_id: accountId,
      id: newId('data'),
      title: `Shared striped ${i}`,
      title_sort: titleSortKey(`Shared striped ${i}`),
      type: 'document',
      content: `common words everywhere uniq${String.fromCharCode(97 + (i % 26))}${i}`,
      tags: '[]',
      metadata: '{}',
      created_at: new Date().toISOString(),
      updated_at: null,
    }));
    await Promise.all(
      rows.map((row) =>
        database.write(async (trx) => {
          await insertDataObject(trx, 'postgres', row);
          await indexDataObject(trx, 'postgres', row);
        }),
      ),
    );
    const total = async (word: string) => (await rowsOf(word)).reduce((n, [, docs]) => n + Number(docs), 0);
    assert.equal(await total('common'), 40);
    assert.ok((await rowsOf('common')).length > 1, 'concurrent writers used more than one stripe');
    // Half are rewritten without "common", the other half deleted, all at once.
    await Promise.all(
      rows.map((row, i) =>
        database.write(async (trx) => {
          if (i % 2 === 0) {
            const after = { ...row, content: 'rewritten text' };
            await reindexDataObject(trx, 'postgres', row, after);
          } else {
            await unindexDataObject(trx, 'postgres', accountId, row.id);
            await trx
              .deleteFrom('data_objects')
              .where('account_id', '=', accountId)
              .where('id', '=', row.id)
              .execute();
          }
        }),
      ),
    );
    assert.deepEqual(await rowsOf('common'), [], 'no object holds "common" any more');
    assert.deepEqual(await rowsOf('uniqb1'), []);
    assert.equal(await total('rewritten'), 20);
    assert.equal(await total('shared'), 20, 'the titles of the 20 rewritten objects');
    const bad = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM search_vocab WHERE account_id = ${accountId} AND docs <= 0`.execute(
      database.db,
    );
    assert.equal(bad.rows[0]?.n, 0);
  });
});

/**
 * Migrations 0015-0017 rewrite index entries through the current indexer while the tables are as
 * 0014 left them: one vocabulary row per word (0018 adds stripes) and no pair sketch (0019).
 */
describe('PostgreSQL upgrades: entries rewritten before 0018 and 0019', {
  skip: postgresSkipReason(),
}, () => {
  it('are written in the layout the tables have then, and found after the upgrade', async () => {
    const created = await createTestDatabase('postgres');
    const database = openDatabase(created.config);
    try {
      await migrate(database, { to: '0014-title-collation' });
      const { account } = await createAccount(database, { name: 'Old', adminEmail: 'old@example.com' });
      const title = 'Upgrade notes';
      // U+2122 folds to a space since 0015, so 0015 rewrites this object's entry.
      const row: DataRow = {
        account_id: account.id,
        id: newId('data'),
        title,
        title_sort: titleSortKey(title),
        type: 'note',
        content: 'report alpha\u2122beta then omega sigma',
        tags: '[]',
        metadata: '{}',
        created_at: new Date().toISOString(),
        updated_at: null,
      };
      await insertDataObject(database.db, 'postgres', row);
      const applied = await migrate(database);
      assert.ok(applied.includes('0015-symbol-words') && applied.includes('0019-phrase-pairs'), `${applied}`);
      const { rows } = await sql<{ sketch: boolean; matches: boolean }>`
        SELECT pairs IS NOT NULL AS sketch, vector @@ '''alpha'' <-> ''beta'''::tsquery AS matches
        FROM search_documents WHERE account_id = ${account.id} AND id = ${row.id}`.execute(database.db);
      assert.deepEqual(rows, [{ sketch: false, matches: true }], 'rewritten by 0015, before 0019');
      const vocabulary = await sql<{ word: string; docs: number }>`
        SELECT word, sum(docs)::int AS docs FROM search_vocab
        WHERE account_id = ${account.id} AND word IN ('alpha', 'beta', 'omega') GROUP BY word ORDER BY word`.execute(
        database.db,
      );
      assert.deepEqual(
        vocabulary.rows.map((r) => [r.word, r.docs]),
        [
          ['alpha', 1],
          ['beta', 1],
          ['omega', 1],
        ],
      );
      // The next write of the object gives it a sketch.
      await database.write(async (trx) => {
        await reindexDataObject(trx, 'postgres', row, { ...row, content: `${row.content} again` });
      });
      const after = await sql<{ sketch: boolean }>`
        SELECT pairs IS NOT NULL AS sketch FROM search_documents
        WHERE account_id = ${account.id} AND id = ${row.id}`.execute(database.db);
      assert.deepEqual(after.rows, [{ sketch: true }]);
    } finally {
      await database.close();
      await created.drop();
    }
  });
});
