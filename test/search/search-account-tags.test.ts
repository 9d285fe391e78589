import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Kysely, sql } from 'kysely';
import { migrate } from '../../src/db/database.ts';
import { ACCOUNT_TAGS, PROGRESS } from '../../src/db/migrations/0015-symbol-words.ts';
import { retag } from '../../src/db/migrations/0020-account-tags.ts';
import { FTS_COLUMNS, ftsRow } from '../../src/search/compile-sqlite.ts';
import { buildIndexDocument } from '../../src/search/document.ts';
import { reindexSearch } from '../../src/search/reindex.ts';
import { createHarness, type TestAccount } from '../helpers/harness.ts';
import { createNotes, search } from './corpus.ts';

// Migration 0020 (SQLite): every token of the search index gets its account's tag, so that bm25
// counts a query's words within the account (test/search/search-tenancy-score.test.ts). Here: an
// index as the previous release wrote it (bare tokens) is rewritten, resumably after a crash, into
// one that answers exactly as an index written tagged from the start, and stays consistent through
// later writes. PostgreSQL has no FTS5 index: there the migration does nothing.

const QUERIES = [
  'report',
  'omega OR sigma',
  '"omega sigma"',
  'rep*',
  '*port',
  'title:budget',
  'tag:"omega sigma"',
  'author:ann',
  'type:record omega',
];

describe('migration 0020 (SQLite): account tags on every index token', () => {
  const h = createHarness('sqlite');
  let a: TestAccount;
  let b: TestAccount;
  const db = () => h.database.db as unknown as Kysely<unknown>;

  async function answers(): Promise<unknown[]> {
    const out: unknown[] = [];
    for (const acc of [a, b]) {
      for (const q of QUERIES) {
        for (const filter of [undefined, 'type:record']) {
          const res = await search(h, acc.adminKey, filter ? { q, filter, limit: 100 } : { q, limit: 100 });
          assert.equal(res.status, 200, res.raw);
          out.push([acc.id, q, filter, res.body.data.total, res.body.data.results.map((r: object) => r)]);
        }
      }
    }
    return out;
  }

  /** FTS5's own check of the index: throws on a token that was not removed as it was written. */
  const integrity = () =>
    sql`INSERT INTO search_fts (search_fts, rank) VALUES ('integrity-check', 0)`.execute(db());

  /** The index as the release before 0020 wrote it: the same entries with bare tokens. */
  async function untag(): Promise<void> {
    await sql`INSERT INTO search_fts (search_fts) VALUES ('delete-all')`.execute(db());
    const { rows } = await sql<{
      doc: number;
      account_id: string;
      id: string;
      title: string;
      type: string;
      content: string;
      tags: string;
      metadata: string;
    }>`
      SELECT s.doc, d.account_id, d.id, d.title, d.type, d.content, d.tags, d.metadata
      FROM search_documents s JOIN data_objects d ON d.account_id = s.account_id AND d.id = s.id
      ORDER BY s.doc`.execute(db());
    for (const row of rows) {
      await sql`INSERT INTO search_fts (rowid, ${sql.raw(FTS_COLUMNS.join(', '))})
        VALUES (${row.doc}, ${sql.join(ftsRow(buildIndexDocument(row), ''))})`.execute(db());
    }
    await sql`DELETE FROM ${sql.table(PROGRESS)} WHERE name = ${ACCOUNT_TAGS}`.execute(db());
    // As before 0020: later migrations are forgotten too (Kysely runs them in order; each is idempotent).
    await sql`DELETE FROM kysely_migration WHERE name >= ${ACCOUNT_TAGS}`.execute(db());
  }

  before(async () => {
    await h.setup();
    a = await h.account('enterprise');
    b = await h.account('enterprise');
    for (const acc of [a, b]) {
      const bodies: Record<string, Record<string, unknown>> = {};
      for (let i = 0; i < 9; i++) {
        bodies[`o${i}`] = {
          type: i % 3 ? 'note' : 'record',
          title: i % 2 ? 'Budget report' : `Weekly notes ${acc === a ? 'omega' : 'sigma'}`,
          tags: ['omega sigma', `t${i}`],
          content: `${i % 3 ? 'omega sigma' : 'sigma then omega'} report number ${i} ${'export '.repeat(i)}`,
          metadata: i % 4 ? { author: 'Ann Lee' } : {},
        };
      }
      await createNotes(h, acc, bodies);
    }
  });
  after(() => h.teardown());

  it('rewrites an untagged index, resuming after a crash, into one that answers as before', async () => {
    const tagged = await answers();
    assert.ok(JSON.stringify(tagged).includes('Budget report'), 'the queries find objects');

    await untag();
    await integrity();
    // Bare tokens: this release's tagged queries find nothing in them.
    const res = await search(h, a.adminKey, { q: 'report' });
    assert.equal(res.body.data.total, 0);

    // Before 0020 has finished, rewrites (0015-0017, `ads reindex`) write bare tokens as well.
    await reindexSearch(h.database, { batch: 4 });
    await integrity();
    assert.equal((await search(h, a.adminKey, { q: 'report' })).body.data.total, 0, 'still bare');

    // Killed after two batches of three; run again from the migrator, it finishes.
    assert.equal(await retag(db(), { batch: 3, batches: 2 }), 6);
    const { rows } = await sql<{ last_id: string; done: number }>`
      SELECT last_id, done FROM ${sql.table(PROGRESS)} WHERE name = ${ACCOUNT_TAGS}`.execute(db());
    assert.equal(Number(rows[0]?.done), 0);
    const reports: [string, number][] = [];
    const applied = await migrate(h.database, { onProgress: (m, n) => reports.push([m, n]) });
    assert.equal(applied[0], ACCOUNT_TAGS);
    assert.deepEqual(
      reports.filter(([m]) => m === ACCOUNT_TAGS),
      [[ACCOUNT_TAGS, 12]],
      'the 12 entries left, reported after their batch',
    );
    await integrity();
    assert.deepEqual(await answers(), tagged);
    assert.deepEqual(await migrate(h.database), [], 'recorded as done');
  });

  it('then removes and rewrites tagged entries cleanly', async () => {
    const found = await search(h, a.adminKey, { q: 'budget', limit: 100 });
    const ids = found.body.data.results.map((r: { id: string }) => r.id);
    assert.ok(ids.length >= 2);
    const patched = await h.request('PATCH', `/v1/data/${ids[0]}`, {
      key: a.adminKey,
      body: { title: 'Quarterly forecast' },
    });
    assert.equal(patched.status, 200, patched.raw);
    const deleted = await h.request('DELETE', `/v1/data/${ids[1]}`, { key: a.adminKey });
    assert.equal(deleted.status, 204, deleted.raw);
    await integrity();
    const after = await search(h, a.adminKey, { q: 'budget', limit: 100 });
    assert.equal(after.body.data.total, ids.length - 2);
    const forecast = await search(h, a.adminKey, { q: 'forecast' });
    assert.deepEqual(
      forecast.body.data.results.map((r: { id: string }) => r.id),
      [ids[0]],
    );
    await reindexSearch(h.database, { restart: true });
    await integrity();
  });
});
