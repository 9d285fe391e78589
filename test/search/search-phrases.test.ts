import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import { type Kysely, sql } from 'kysely';
import { up as migrate0017 } from '../../src/db/migrations/0017-phrase-spill.ts';
import { pairHashes } from '../../src/search/compile-postgres.ts';
import { buildIndexDocument, cachedStemmer, FREE_TEXT_FIELDS } from '../../src/search/document.ts';
import { describeEachDatabase, type TestAccount } from '../helpers/harness.ts';
import { createNotes, search } from './corpus.ts';

// On PostgreSQL a phrase is checked first on the small `rank` vector, which keeps only the first 8
// positions of each stem (compile-postgres.ts `rankPhrases`). These objects put phrases before and
// after that cut, so a check that trusted a cut `rank` would miss them.
/** Each object as a note titled after its name. */
const bodies = (contents: Record<string, string>) =>
  Object.fromEntries(
    Object.entries(contents).map(([name, content]) => [name, { title: `Object ${name}`, content }]),
  );

const many = (word: string, n: number) => Array.from({ length: n }, () => `${word} filler`).join(' ');

const OBJECTS = {
  /** "alpha beta" only after alpha's tenth occurrence. */
  late: `${many('alpha', 10)} alpha beta`,
  /** alpha and beta twelve times each, never in that order next to each other. */
  apart: `${many('alpha', 12)} ${many('beta', 12)} beta alpha`,
  /** Few occurrences: `rank` holds them all. */
  short: 'gamma delta and alpha then beta',
  /** Few occurrences, in the wrong order. */
  reversed: 'delta gamma',
  /** The phrase twice, both times late, and another word. */
  both: `${many('gamma', 9)} gamma delta ${many('alpha', 9)} alpha beta report`,
} as const;

describeEachDatabase('GET /search: phrases in objects with repeated words', (h) => {
  let acc: TestAccount;
  const ids: Record<string, string> = {};
  const names = (results: { id: string }[]) =>
    results.map((r) => Object.keys(ids).find((k) => ids[k] === r.id)).sort();

  before(async () => {
    acc = await h.account('enterprise');
    Object.assign(ids, await createNotes(h, acc, bodies(OBJECTS)));
  });

  const cases: [string, string[]][] = [
    ['"alpha beta"', ['both', 'late']],
    ['"beta alpha"', ['apart']],
    ['"gamma delta"', ['both', 'short']],
    ['"delta gamma"', ['reversed']],
    ['"gamma delta" "alpha beta"', ['both']],
    ['"alpha beta" report', ['both']],
    ['"alpha beta" -report', ['late']],
    ['"alpha beta" OR "delta gamma"', ['both', 'late', 'reversed']],
    ['"alpha filler alpha"', ['apart', 'both', 'late']],
  ];

  const check = async (label: string) => {
    for (const [q, expected] of cases) {
      const res = await search(h, acc.adminKey, { q, limit: 100 });
      assert.equal(res.status, 200, res.raw);
      assert.deepEqual(names(res.body.data.results), expected, `${label}: ${q}`);
      assert.equal(res.body.data.total, expected.length, `${label}: ${q}`);
    }
  };

  it('finds a phrase wherever it occurs, and only where its words are adjacent', () => check('indexed'));

  it('after an update, on the new text only', async () => {
    const res = await h.request('PATCH', `/v1/data/${ids.late}`, {
      key: acc.adminKey,
      body: { content: `${many('alpha', 10)} beta alpha` },
    });
    assert.equal(res.status, 200, res.raw);
    const found = await search(h, acc.adminKey, { q: '"alpha beta"', limit: 100 });
    assert.deepEqual(names(found.body.data.results), ['both']);
    const back = await h.request('PATCH', `/v1/data/${ids.late}`, {
      key: acc.adminKey,
      body: { content: OBJECTS.late },
    });
    assert.equal(back.status, 200, back.raw);
    await check('restored');
  });

  // Rows written before migration 0009 have neither the `~` mark nor the stems' cut marks.
  if (h.dialect === 'postgres')
    it('also in rows indexed before their rank vectors had cut marks', async () => {
      const db = h.database.db;
      const { rows } = await sql<{ n: number }>`
        WITH stripped AS (
          UPDATE search_documents
          SET rank = ts_delete(rank, ARRAY(SELECT l FROM unnest(tsvector_to_array(rank)) l WHERE l LIKE '~%'))
          WHERE account_id = ${acc.id}
          RETURNING id)
        SELECT count(*)::int AS n FROM stripped`.execute(db);
      assert.equal(rows[0]!.n, Object.keys(OBJECTS).length);
      const marks = await sql<{ n: number }>`
        SELECT count(*)::int AS n FROM search_documents
        WHERE account_id = ${acc.id} AND rank @@ '''~'''::tsquery`.execute(db);
      assert.equal(marks.rows[0]!.n, 0, 'no row has marks left');
      await check('unmarked');
    });
});

// A PostgreSQL tsvector keeps 256 positions per lexeme; `vector` spills a stem's later positions
// to `stem~2` ... `stem~8` (migration 0017), so phrases are found up to a word's 2,048th
// occurrence there, as everywhere on SQLite. These objects put each phrase past that 256th.
describeEachDatabase("GET /search: phrases after a word's 256th occurrence", (h) => {
  let acc: TestAccount;
  const ids: Record<string, string> = {};
  const names = (results: { id: string }[]) =>
    results.map((r) => Object.keys(ids).find((k) => ids[k] === r.id)).sort();
  const LATE = {
    /** "alpha beta" once, after alpha's 300th occurrence. */
    deep: `${many('alpha', 300)} alpha beta`,
    /** "omega sigma" after omega's 2,000th occurrence, then "report". */
    deeper: `${many('omega', 2000)} omega sigma report`,
    /** Both words past 256 occurrences, never adjacent in this order. */
    apart: `${many('alpha', 300)} ${many('beta', 300)} beta alpha report`,
    plain: 'a report without the phrases',
  } as const;

  before(async () => {
    acc = await h.account('enterprise');
    Object.assign(ids, await createNotes(h, acc, bodies(LATE)));
  });

  const cases: [string, string[]][] = [
    ['"alpha beta"', ['deep']],
    ['"omega sigma"', ['deeper']],
    ['"beta alpha"', ['apart']],
    ['content:"alpha beta"', ['deep']],
    ['"alpha beta" OR "omega sigma"', ['deep', 'deeper']],
    ['report -"omega sigma"', ['apart', 'plain']],
    ['"omega sigma" report', ['deeper']],
    ['"sigma report"', ['deeper']],
  ];

  it('finds them, in every kind of query, and excludes them under NOT', async () => {
    for (const [q, expected] of cases) {
      const res = await search(h, acc.adminKey, { q, limit: 100 });
      assert.equal(res.status, 200, res.raw);
      assert.deepEqual(names(res.body.data.results), expected, q);
      assert.equal(res.body.data.total, expected.length, q);
    }
  });

  it('after an update moves the phrase, only where it now is', async () => {
    const res = await h.request('PATCH', `/v1/data/${ids.deep}`, {
      key: acc.adminKey,
      body: { content: `${many('alpha', 300)} beta alpha` },
    });
    assert.equal(res.status, 200, res.raw);
    const gone = await search(h, acc.adminKey, { q: '"alpha beta"' });
    assert.deepEqual(names(gone.body.data.results), []);
    const moved = await search(h, acc.adminKey, { q: '"beta alpha"', limit: 100 });
    assert.deepEqual(names(moved.body.data.results), ['apart', 'deep']);
  });

  // Entries written before migration 0017 have no spill lexemes: their stems stop at 256 positions.
  if (h.dialect === 'postgres')
    it('migration 0017 rewrites the entries an older release cut', async () => {
      const db = h.database.db as unknown as Kysely<unknown>;
      const { rows } = await sql<{ n: number }>`
        WITH cut AS (
          UPDATE search_documents
          SET vector = ts_delete(vector, ARRAY(SELECT l FROM unnest(tsvector_to_array(vector)) l WHERE l LIKE '%~%'))
          WHERE account_id = ${acc.id} AND vector @@ '''omega~2'' | ''alpha~2'''::tsquery
          RETURNING id)
        SELECT count(*)::int AS n FROM cut`.execute(db);
      assert.equal(rows[0]!.n, 3, 'deep, deeper and apart had spills');
      const before = await search(h, acc.adminKey, { q: '"omega sigma" OR "beta alpha"', limit: 100 });
      assert.deepEqual(names(before.body.data.results), [], 'the old form misses them');
      // A database from before 0017 has no record of it (this one ran it when it was created).
      await sql`DELETE FROM search_refold_progress WHERE name = '0017-phrase-spill'`.execute(db);
      await migrate0017(db, h.dialect);
      await migrate0017(db, h.dialect);
      const after = await search(h, acc.adminKey, { q: '"omega sigma" OR "beta alpha"', limit: 100 });
      assert.deepEqual(names(after.body.data.results), ['apart', 'deep', 'deeper']);
      const report = await search(h, acc.adminKey, { q: 'report -"omega sigma"', limit: 100 });
      assert.deepEqual(names(report.body.data.results), ['apart', 'plain']);
      const vocabulary = await sql<{ word: string; docs: number }>`
        SELECT word, sum(docs)::int AS docs FROM search_vocab
        WHERE account_id = ${acc.id} AND word IN ('alpha', 'omega', 'report') GROUP BY word ORDER BY word`.execute(
        db,
      );
      assert.deepEqual(
        vocabulary.rows.map((r) => [r.word, r.docs]),
        [
          ['alpha', 2],
          ['omega', 1],
          ['report', 3],
        ],
        'the vocabulary is unchanged',
      );
    });
});

// Migration 0019: on PostgreSQL a phrase candidate is first tested against the row's sketch of
// adjacent stem pairs (compile-postgres.ts `PairSketch`) and ruled out when it lacks a pair.
describeEachDatabase('GET /search: phrases among many candidates', (h) => {
  let acc: TestAccount;
  const ids: Record<string, string> = {};
  /** Long objects that all hold "omega" and "sigma"; only some hold them adjacent, in that order. */
  const words = (i: number) => Array.from({ length: 400 }, (_, j) => `w${(i * 7 + j * 13) % 997}x`).join(' ');
  const contents: Record<string, Record<string, unknown>> = {};
  for (let i = 0; i < 24; i++) {
    const adjacent = i % 5 === 0;
    contents[`n${i}`] = {
      title: `Sketch ${i}`,
      tags: i % 7 === 3 ? ['omega sigma'] : ['sigma', 'omega'],
      content: `${words(i)} ${adjacent ? 'omega sigma' : 'sigma omega filler omega'} ${words(i + 1)} sigma`,
    };
  }
  const names = (results: { id: string }[]) =>
    results.map((r) => Object.keys(ids).find((k) => ids[k] === r.id)).sort();

  before(async () => {
    acc = await h.account('enterprise');
    Object.assign(ids, await createNotes(h, acc, contents));
  });

  it('finds exactly the objects whose text holds the phrase', async () => {
    const res = await search(h, acc.adminKey, { q: '"omega sigma"', limit: 100 });
    assert.equal(res.status, 200, res.raw);
    const expected = Object.keys(contents)
      .filter((_, i) => i % 5 === 0 || i % 7 === 3)
      .sort();
    assert.deepEqual(names(res.body.data.results), expected);
    assert.equal(res.body.data.total, expected.length);
  });

  if (h.dialect === 'postgres')
    it('sets the bits of every adjacent pair of title, tags and content, as search_page reads them', async () => {
      const stem = cachedStemmer();
      for (const name of ['n0', 'n3', 'n4']) {
        const row = await h.database.db
          .selectFrom('data_objects')
          .select(['account_id', 'id', 'title', 'type', 'content', 'tags', 'metadata'])
          .where('account_id', '=', acc.id)
          .where('id', '=', ids[name]!)
          .executeTakeFirstOrThrow();
        const doc = buildIndexDocument(row);
        const hashes: number[] = [];
        for (const field of FREE_TEXT_FIELDS)
          for (const segment of doc.fields[field])
            for (let i = 0; i + 1 < segment.length; i++)
              hashes.push(...pairHashes(stem(segment[i]!), stem(segment[i + 1]!)));
        assert.ok(hashes.length > 1600, `${name}: ${hashes.length / 2} pairs`);
        const { rows } = await sql<{ bytes: number; unset: number }>`
          SELECT octet_length(pairs) AS bytes,
            (SELECT count(*)::int FROM unnest(${hashes}::int4[]) h
             WHERE get_bit(pairs, h & (octet_length(pairs) * 8 - 1)) = 0) AS unset
          FROM search_documents WHERE account_id = ${acc.id} AND id = ${ids[name]!}`.execute(h.database.db);
        assert.equal(rows[0]?.unset, 0, `${name}: every pair's bits are set`);
        assert.equal(rows[0]?.bytes, 1024, `${name}: 800 pairs take the largest sketch`);
      }
    });

  if (h.dialect === 'postgres')
    it('rules out a candidate whose sketch lacks the pair, and checks a row without one as before', async () => {
      const db = h.database.db;
      const found = async () =>
        names((await search(h, acc.adminKey, { q: '"omega sigma"', limit: 100 })).body.data.results);
      const setSketch = (value: Buffer | null) =>
        sql`UPDATE search_documents SET pairs = ${value} WHERE account_id = ${acc.id} AND id = ${ids.n5!}`.execute(
          db,
        );
      assert.ok((await found()).includes('n5'));
      await setSketch(Buffer.alloc(16)); // no bit set: no pair
      assert.ok(!(await found()).includes('n5'), 'ruled out by its sketch');
      await setSketch(null); // as a row written before 0019
      assert.ok((await found()).includes('n5'), 'checked on rank without a sketch');
    });
});
