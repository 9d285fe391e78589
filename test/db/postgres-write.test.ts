import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { type Database, migrate, openDatabase } from '../../src/db/database.ts';
import { beforeCommit, inBatch } from '../../src/db/group-commit.ts';
import { newId } from '../../src/lib/ids.ts';
import { titleSortKey } from '../../src/lib/sort-key.ts';
import { createAccount } from '../../src/modules/accounts/service.ts';
import { type DataRow, insertDataObject } from '../../src/modules/data/repo.ts';
import { indexDataObject } from '../../src/search/search-index.ts';
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
      }>`SELECT docs FROM search_vocab WHERE account_id = ${accountId} AND word = ${word}`.execute(
        database.db,
      )
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
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let indexed!: () => void;
    const hasIndexed = new Promise<void>((resolve) => {
      indexed = resolve;
    });
    const first = database.write(async (trx) => {
      const row = object('First report');
      await insertDataObject(trx, 'postgres', row);
      await indexDataObject(trx, 'postgres', row);
      indexed();
      await gate; // the rest of a longer write: events, deliveries, ...
    });
    await hasIndexed;
    const second = database.write(async (trx) => {
      const row = object('Second report');
      await insertDataObject(trx, 'postgres', row);
      await indexDataObject(trx, 'postgres', row);
    });
    const outcome = await Promise.race([second.then(() => 'committed'), sleep(3000).then(() => 'waiting')]);
    release();
    await Promise.all([first, second]);
    assert.equal(outcome, 'committed', 'the second write waited for the first one to commit');
    assert.equal(await docsOf('revenue'), 2, 'both writes counted once in the vocabulary');
    assert.equal(await docsOf('report'), 2);
  });
});
