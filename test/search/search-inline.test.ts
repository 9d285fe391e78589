import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import { sql } from 'kysely';
import { describeEachDatabase, type TestAccount } from '../helpers/harness.ts';
import { search } from './corpus.ts';

// Objects large enough that their search row passes PostgreSQL's TOAST threshold. Migration 0011
// keeps such a row's small columns (id, account, sort title, tags, metadata) in the row, so that
// searches sorted by title or filtered by tag or metadata read them from the heap page: only the
// large vectors may move out of line.

/** `n` distinct pseudo-words from a fixed seed: a row of many distinct lexemes compresses poorly. */
function words(seed: number, n: number): string {
  let x = seed;
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    let w = '';
    for (let j = 0; j < 8; j++) {
      x = (x * 1103515245 + 12345) % 2 ** 31;
      w += String.fromCharCode(97 + (x % 26));
    }
    out.push(w);
  }
  return out.join(' ');
}

const TITLES = ['Charlie report', 'Alpha report', 'Bravo report'];

describeEachDatabase('GET /search over objects with large rows', (h) => {
  let acc: TestAccount;
  const ids: Record<string, string> = {};

  before(async () => {
    acc = await h.account('enterprise');
    for (const [i, title] of TITLES.entries()) {
      const res = await h.request('POST', '/v1/data', {
        key: acc.adminKey,
        body: {
          title,
          type: 'note',
          content: `quarterly ${words(i + 1, 2500)}`,
          tags: i === 1 ? ['finance', 'internal'] : ['finance'],
          metadata: { author: i === 2 ? 'Dana Scully' : 'Fox Mulder', status: 'published' },
        },
      });
      assert.equal(res.status, 201, res.raw);
      ids[title] = res.body.data.id;
    }
  });

  it('sorts them by title, both ways', async () => {
    for (const order of ['asc', 'desc'] as const) {
      const res = await search(h, acc.adminKey, { q: 'quarterly', sort: 'title', order });
      assert.equal(res.status, 200, res.raw);
      const expected = [...TITLES].sort();
      if (order === 'desc') expected.reverse();
      assert.deepEqual(
        res.body.data.results.map((r: { title: string }) => r.title),
        expected,
      );
    }
  });

  it('filters them by tag and by metadata', async () => {
    const byTag = await search(h, acc.adminKey, { q: 'quarterly', filter: 'tag:internal' });
    assert.equal(res(byTag), ids['Alpha report']);
    const byAuthor = await search(h, acc.adminKey, { q: 'quarterly', filter: 'author:Dana Scully' });
    assert.equal(res(byAuthor), ids['Bravo report']);
  });

  if (h.dialect === 'postgres')
    it('keeps the small columns of those rows in the row: only vectors go out of line', async () => {
      const db = h.database.db;
      const { rows: toast } = await sql<{ name: string }>`
        SELECT reltoastrelid::regclass::text AS name FROM pg_class
        WHERE relname = 'search_documents' AND relnamespace = 'public'::regnamespace`.execute(db);
      // The stored size of each out-of-line value: a vector of 2,500 distinct words is tens of
      // kilobytes; an id, a title or a tag list is tens of bytes.
      const { rows } = await sql<{ bytes: number }>`
        SELECT sum(length(chunk_data))::int AS bytes FROM ${sql.table(toast[0]!.name)}
        GROUP BY chunk_id`.execute(db);
      assert.ok(rows.length >= TITLES.length, `out-of-line values: ${rows.length}`);
      const small = rows.filter((r) => r.bytes < 1000).map((r) => r.bytes);
      assert.deepEqual(small, [], 'small values stored out of line');
    });
});

function res(page: { status: number; raw: string; body: { data: { results: { id: string }[] } } }) {
  assert.equal(page.status, 200, page.raw);
  assert.equal(page.body.data.results.length, 1, page.raw);
  return page.body.data.results[0]!.id;
}
