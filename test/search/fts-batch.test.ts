import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { asBatch } from '../../src/db/group-commit.ts';
import { indexDataObject, unindexDataObject } from '../../src/search/search-index.ts';
import { createHarness, type TestAccount } from '../helpers/harness.ts';
import { dataRow } from '../helpers/rows.ts';
import { search } from './corpus.ts';

// SQLite: FTS5 writes a new segment whenever its pending terms are flushed, at COMMIT and also
// whenever a later statement of the transaction opens a statement savepoint, or a write's rowid is
// lower than the one before it. The writes of one group-commit batch must reach search_fts last and
// in rowid order, so the batch adds one segment, not one per object (src/search/index-sqlite.ts,
// writeFts).

describe('SQLite: one FTS5 segment per group-commit batch', () => {
  const h = createHarness('sqlite');
  let acc: TestAccount;
  before(async () => {
    await h.setup();
    acc = await h.account('enterprise');
    // No merging, so every flush stays visible as a segment of its own.
    await sql`INSERT INTO search_fts (search_fts, rank) VALUES ('automerge', 0)`.execute(h.database.db);
    await sql`INSERT INTO search_fts (search_fts, rank) VALUES ('crisismerge', 1000)`.execute(h.database.db);
  });
  after(() => h.teardown());

  // Every segment of these small documents is one leaf page: one row of search_fts_data each.
  const pages = async () =>
    Number(
      (await sql<{ n: number }>`SELECT count(*) AS n FROM search_fts_data`.execute(h.database.db)).rows[0]!.n,
    );
  // Segment ids: rowids of search_fts_data above 10 are pages, the segment id shifted left by 37.
  const segments = async () =>
    (
      await sql<{ segid: number }>`
        SELECT DISTINCT id >> 37 AS segid FROM search_fts_data WHERE id > 10`.execute(h.database.db)
    ).rows.map((r) => Number(r.segid));
  const create = (i: number) =>
    h.request('POST', '/v1/data', {
      key: acc.adminKey,
      body: {
        type: 'note',
        title: `batch ${i}`,
        content: `forensic ledger entry number${i}`,
        tags: ['audit'],
      },
    });

  it('writes the index entries of concurrent creates as one segment, all of them searchable', async () => {
    await create(0);
    const before = await pages();
    const created = await Promise.all(Array.from({ length: 8 }, (_, i) => create(i + 1)));
    for (const res of created) assert.equal(res.status, 201, res.raw);
    const added = (await pages()) - before;
    assert.ok(added >= 1 && added <= 2, `8 creates in one batch added ${added} segment pages`);
    const found = await search(h, acc.adminKey, { q: 'forensic ledger', limit: '50' });
    assert.equal(found.body.data.total, 9);
    for (let i = 1; i <= 8; i++) {
      assert.equal((await search(h, acc.adminKey, { q: `number${i}` })).body.data.total, 1, `number${i}`);
    }
  });

  it('writes the new entries of concurrent PATCHes as one segment, the old ones erased', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 8; i++) ids.push((await create(200 + i)).body.data.id as string);
    const before = await segments();
    // Each PATCH removes an old rowid (lower than any new one) after the previous PATCH of the
    // batch added a new rowid: in arrival order, FTS5 flushed the pending entry at each of them.
    const patched = await Promise.all(
      ids.map((id, i) =>
        h.request('PATCH', `/v1/data/${id}`, { key: acc.adminKey, body: { content: `revised clause${i}` } }),
      ),
    );
    for (const res of patched) assert.equal(res.status, 200, res.raw);
    const added = (await segments()).filter((s) => !before.includes(s));
    assert.equal(added.length, 1, `8 PATCHes in one batch added segments ${added.join(', ')}`);
    for (let i = 0; i < 8; i++) {
      assert.equal((await search(h, acc.adminKey, { q: `clause${i}` })).body.data.total, 1, `clause${i}`);
      assert.equal(
        (await search(h, acc.adminKey, { q: `number${200 + i}` })).body.data.total,
        0,
        'old words',
      );
    }
    await sql`INSERT INTO search_fts (search_fts, rank) VALUES ('integrity-check', 0)`.execute(h.database.db);
  });

  it('keeps an entry added and removed in one batch in that order (the same rowid)', async () => {
    const row = dataRow(acc.id, { title: 'Fleeting', content: 'ephemeral marmalade' });
    await h.database.db.transaction().execute((trx) =>
      asBatch(trx, async () => {
        await trx.insertInto('data_objects').values(row).execute();
        await indexDataObject(trx, 'sqlite', row);
        await unindexDataObject(trx, 'sqlite', acc.id, row.id);
        await trx.deleteFrom('data_objects').where('id', '=', row.id).execute();
      }),
    );
    assert.equal((await search(h, acc.adminKey, { q: 'marmalade' })).body.data.total, 0);
    assert.equal((await search(h, acc.adminKey, { q: 'marm*' })).body.data.total, 0);
    await sql`INSERT INTO search_fts (search_fts, rank) VALUES ('integrity-check', 0)`.execute(h.database.db);
  });

  it('keeps a create, a PATCH and a DELETE of one batch in order', async () => {
    const id = (await create(100)).body.data.id as string;
    const gone = (await create(102)).body.data.id as string;
    const [patched, other, removed] = await Promise.all([
      h.request('PATCH', `/v1/data/${id}`, { key: acc.adminKey, body: { content: 'replacement wording' } }),
      create(101),
      h.request('DELETE', `/v1/data/${gone}`, { key: acc.adminKey }),
    ]);
    assert.equal(patched.status, 200, patched.raw);
    assert.equal(other.status, 201, other.raw);
    assert.equal(removed.status, 204, removed.raw);
    assert.equal((await search(h, acc.adminKey, { q: 'number100' })).body.data.total, 0, 'old words gone');
    assert.equal((await search(h, acc.adminKey, { q: 'replacement' })).body.data.total, 1);
    assert.equal((await search(h, acc.adminKey, { q: 'number101' })).body.data.total, 1);
    assert.equal((await search(h, acc.adminKey, { q: 'number102' })).body.data.total, 0, 'deleted');
    await sql`INSERT INTO search_fts (search_fts, rank) VALUES ('integrity-check', 0)`.execute(h.database.db);
  });
});
