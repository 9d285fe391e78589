// The search index on SQLite: FTS5 rows written inside the caller's transaction, the ranked query,
// and wildcard expansion through the account's vocabulary (and its words' trigrams, migration 0022).
// Every LIMIT is written `+?`: SQLite compiles the value bound to a bare `LIMIT ?` into the program,
// so binding it expires the statement and each search would parse and plan it again (docs/
// benchmarks.md, "SQLite: LIMIT parameters of a search"; test/search/search-limit-params.test.ts).
import { type RawBuilder, sql } from 'kysely';
import { hotQuery } from '../db/database.ts';
import { batchOf, beforeCommit } from '../db/group-commit.ts';
import type { Db } from '../db/types.ts';
import {
  accountTag,
  compileMatch,
  DOCS_PER_ACCOUNT,
  FTS_COLUMNS,
  fieldWeight,
  filterMatch,
  ftsRow,
  MAX_ACCOUNT_SEQ,
  RANK_WEIGHTS,
  seqOfDoc,
  TAGS_WEIGHTS,
  TITLE_WEIGHTS,
  tierMatch,
} from './compile-sqlite.ts';
import {
  buildIndexDocument,
  distinctWords,
  type IndexDocument,
  type IndexedRow,
  sharedStem,
  type VocabularyDelta,
  vocabularyJson,
} from './document.ts';
import { FETCH_CHARS } from './excerpt.ts';
import { layoutOf } from './layout.ts';
import { phraseBm25, phraseCounts, phraseIdf, readVarints } from './phrase-rank.ts';
import type { Leaf } from './plan.ts';
import type { ResultRow, SearchHit, SearchPage, SearchQuery } from './search-index.ts';
import { patternParts } from './text.ts';

/** The words an indexed document adds to the account's vocabulary. */
export const wordsOf = (doc: IndexDocument): string[] => distinctWords(doc);

const takeDoc = hotQuery<{ seq: number; n: number }>(`
  INSERT INTO search_accounts (account_id) VALUES (?)
  ON CONFLICT (account_id) DO UPDATE SET next_doc = next_doc + 1
  RETURNING seq, next_doc AS n`);
const insertRow = hotQuery(`
  INSERT INTO search_documents (doc, account_id, id, type, title_sort, created_at, tags, metadata)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?)`);
const insertFts = hotQuery(`
  INSERT INTO search_fts (rowid, ${FTS_COLUMNS.join(', ')})
  VALUES (?${', ?'.repeat(FTS_COLUMNS.length)})`);

/** The next FTS5 rowid of the account's range (see DOCS_PER_ACCOUNT). */
async function nextDoc(db: Db, accountId: string): Promise<number> {
  const rows = await takeDoc(db, 'sqlite', [accountId]);
  const { seq, n } = rows[0]!;
  if (seq > MAX_ACCOUNT_SEQ || n >= DOCS_PER_ACCOUNT) throw new Error('search index rowid space exhausted');
  return seq * DOCS_PER_ACCOUNT + n;
}

/** Where the account's FTS5 rows are: their rowid range and token tag. */
interface AccountRows {
  range: [number, number];
  tag: string;
}

/** The account's rows, or null when it has never indexed anything. */
async function accountRows(db: Db, accountId: string): Promise<AccountRows | null> {
  const { rows } = await sql<{ seq: number }>`
    SELECT seq FROM search_accounts WHERE account_id = ${accountId}`.execute(db);
  if (!rows[0]) return null;
  const lo = rows[0].seq * DOCS_PER_ACCOUNT;
  return { range: [lo, lo + DOCS_PER_ACCOUNT - 1], tag: accountTag(rows[0].seq) };
}

/** The tag of the tokens of FTS5 row `doc`, as `db`'s index layout writes them. */
const tagOf = (db: Db, doc: number) => (layoutOf(db).accountTags ? accountTag(seqOfDoc(doc)) : '');

/** Adds the object's rows; returns its distinct words. */
export async function insertDocument(db: Db, row: IndexedRow, doc: IndexDocument): Promise<string[]> {
  const rowid = await nextDoc(db, row.account_id);
  await insertRow(db, 'sqlite', [
    rowid,
    row.account_id,
    row.id,
    row.type,
    row.title_sort,
    row.created_at,
    row.tags,
    row.metadata,
  ]);
  const values = [rowid, ...ftsRow(doc, tagOf(db, rowid))];
  await writeFts(db, rowid, (trx) => insertFts(trx, 'sqlite', values));
  return wordsOf(doc);
}

/** A write to search_fts and the FTS5 rowid it adds or removes. */
interface FtsWrite {
  rowid: number;
  write: (trx: Db) => Promise<unknown>;
}

/** Per open batch: its writes to search_fts, run after every other statement of it. */
const batchFts = new WeakMap<object, FtsWrite[]>();

/**
 * Runs a write to search_fts, or inside a group-commit batch queues it to run last, in rowid order.
 * FTS5 keeps the terms of its writes in memory until the COMMIT and then writes them as one new
 * segment, but it also writes them out whenever a later statement of the transaction opens a
 * statement savepoint (an upsert, a write with triggers: nearly every other write), and whenever a
 * write's rowid is lower than the one before it (its pending terms must stay in rowid order). Run in
 * place and in arrival order, each object of a batch would become a segment of its own: a PATCH
 * removes an old rowid after the batch's previous PATCH added a new one, and deletes come in any
 * order. Every segment is one more for each later secure delete to look each of its words up in,
 * and one more to merge. The sort is stable, so an insert and a delete of the same rowid (an object
 * created and deleted in one batch) keep their order.
 */
async function writeFts(db: Db, rowid: number, write: (trx: Db) => Promise<unknown>): Promise<void> {
  const batch = batchOf(db);
  if (!batch) {
    await write(db);
    return;
  }
  let queued = batchFts.get(batch);
  if (!queued) {
    const writes: FtsWrite[] = [];
    queued = writes;
    batchFts.set(batch, writes);
    await beforeCommit(
      db,
      'search_fts',
      async (trx) => {
        writes.sort((a, b) => a.rowid - b.rowid);
        for (const w of writes) await w.write(trx);
      },
      { last: true },
    );
  }
  queued.push({ rowid, write });
}

/**
 * Removes the object from the index; `doc` must be built from the row as it was indexed: FTS5's
 * 'delete' needs the original tokens, and with secure-delete it erases them. False when not indexed.
 */
export async function removeDocument(db: Db, doc: IndexDocument): Promise<boolean> {
  const { rows } = await sql<{ doc: number }>`
    DELETE FROM search_documents WHERE account_id = ${doc.accountId} AND id = ${doc.id}
    RETURNING doc`.execute(db);
  if (!rows[0]) return false;
  const statement = sql`
    INSERT INTO search_fts (search_fts, rowid, ${sql.raw(FTS_COLUMNS.join(', '))})
    VALUES ('delete', ${rows[0].doc}, ${sql.join(ftsRow(doc, tagOf(db, rows[0].doc)))})`;
  await writeFts(db, rows[0].doc, (trx) => statement.execute(trx));
  return true;
}

/** Applies word -> +1/-1 to the account's vocabulary; words no object holds any more are deleted. */
export async function applyVocabulary(db: Db, accountId: string, delta: VocabularyDelta): Promise<void> {
  const { json, removes } = vocabularyJson(delta);
  if (json === '{}') return;
  await sql`
    INSERT INTO search_vocab (account_id, word, docs)
    SELECT ${accountId}, key, value FROM json_each(${json}) WHERE true
    ON CONFLICT (account_id, word) DO UPDATE SET docs = docs + excluded.docs`.execute(db);
  if (!removes) return;
  await sql`
    DELETE FROM search_vocab
    WHERE account_id = ${accountId} AND docs <= 0 AND word IN (SELECT key FROM json_each(${json}))`.execute(
    db,
  );
}

/**
 * The trigrams that look a pattern up: from its longest literal run (3 characters or more), the
 * first, middle and last, distinct. Characters as SQLite's `substr` counts them (code points).
 */
export function lookupTrigrams(longest: string): string[] {
  const chars = Array.from(longest);
  if (chars.length < 3) return [];
  const last = chars.length - 3;
  const at = [0, Math.floor(last / 2), last];
  return [...new Set(at.map((i) => chars.slice(i, i + 3).join('')))];
}

/**
 * The account's words (up to `max`, most frequent first) holding every one of `trigrams` and
 * matching `like`. The account's trigram rows drive, and each word is read by its id (CROSS JOIN
 * keeps that order). The lookup through 0002's FTS5 table, `id IN (...)` beside `account_id = ?`,
 * walked the account's whole vocabulary through (account_id, word) and probed each id: 25 ms at
 * 300,000 words, whatever the pattern.
 */
export function infixLookup(accountId: string, trigrams: string[], like: string, max: number) {
  const seq = sql`(SELECT seq FROM search_accounts WHERE account_id = ${accountId})`;
  const sets = trigrams.map(
    (t) => sql`SELECT vocab_id FROM search_vocab_trigrams WHERE account_seq = ${seq} AND trigram = ${t}`,
  );
  return sql<{ word: string }>`
    SELECT v.word FROM (${sql.join(sets, sql` INTERSECT `)}) t
    CROSS JOIN search_vocab v ON v.id = t.vocab_id
    WHERE v.account_id = ${accountId} AND v.word LIKE ${like}
    ORDER BY v.docs DESC, v.word LIMIT +${max}`;
}

/**
 * Up to `max` of the account's words that may match a `*` pattern, most frequent first. A literal
 * run of three or more characters goes through the account's trigram rows (migration 0022): the
 * words holding each of up to three of its trigrams, intersected, are the only vocabulary rows
 * read. Else a literal start goes through the vocabulary's B-tree; only patterns like `*a*b` scan
 * the account's vocabulary.
 */
export async function expandPattern(
  db: Db,
  accountId: string,
  pattern: string,
  max: number,
): Promise<string[]> {
  const { prefix, longest } = patternParts(pattern);
  const like = pattern.replaceAll('*', '%');
  const trigrams = lookupTrigrams(longest);
  if (trigrams.length > 0) {
    const { rows } = await infixLookup(accountId, trigrams, like, max).execute(db);
    return rows.map((r) => r.word);
  }
  const range = prefix === '' ? sql`` : sql`AND word >= ${prefix} AND word < ${`${prefix}\u{10FFFF}`}`;
  const { rows } = await sql<{ word: string }>`
    SELECT word FROM search_vocab
    WHERE account_id = ${accountId} ${range} AND word LIKE ${like}
    ORDER BY docs DESC, word LIMIT +${max}`.execute(db);
  return rows.map((r) => r.word);
}

/**
 * Score in (0, 1]: title hits above tag hits above the rest, then bm25 (s = -b >= 0) squashed into
 * the tier as 0.5 + 0.5 * s / (s + 10), written with one reference to `b` so bm25 runs once per row.
 */
const SCORE = sql.raw(
  `(CASE WHEN r.bt < 0 THEN 4 ELSE 0 END + CASE WHEN r.bg < 0 THEN 2 ELSE 0 END
    + 1.0 - 5.0 / (10.0 - r.b)) / 7.0`,
);

/**
 * `tag:` filter. The row's tags are JSON.stringify output, so a tag it holds appears in it as its
 * own JSON text: `instr` rules out most rows before json_each (a table-valued function, costly
 * to set up once per match) confirms the element.
 */
const tagFilter = (tag: string) => sql`(instr(s.tags, ${JSON.stringify(tag)}) > 0
  AND EXISTS (SELECT 1 FROM json_each(s.tags) t WHERE t.value = ${tag}))`;

/**
 * `metadata.<key>:` filter (values are strings, decisions §5). A JSON path names the key in double
 * quotes and compares it with the key's JSON text unescaped: a key that JSON escapes (`"`, `\`,
 * control characters) goes through json_each instead.
 */
function metadataFilter(key: string, value: string): RawBuilder<unknown> {
  if (JSON.stringify(key) !== `"${key}"`) {
    return sql`EXISTS (SELECT 1 FROM json_each(s.metadata) m WHERE m.key = ${key} AND m.value = ${value})`;
  }
  return sql`s.metadata ->> ${`$."${key}"`} = ${value}`;
}

/** One page of hits (id and score) and the total, all within `q.accountId`. */
export async function search(db: Db, q: SearchQuery): Promise<SearchPage> {
  const account = await accountRows(db, q.accountId);
  if (!account) return { hits: [], total: 0 };
  // The account's tag and rowid range each confine FTS5 to the account (the range lets FTS5 skip
  // to it in a doclist); `s.account_id` says it again in SQL wherever object rows are read.
  const { range } = account;
  const fts = sql`search_fts MATCH ${compileMatch(q.plan, account.tag)}
    AND search_fts.rowid BETWEEN ${range[0]} AND ${range[1]}`;
  const conditions: RawBuilder<unknown>[] = [];
  for (const f of q.filters) {
    // Not in the MATCH: bm25 would count the type's whole posting list on every query.
    if (f.kind === 'type') conditions.push(sql`s.type = ${f.value}`);
    else if (f.kind === 'tag') conditions.push(tagFilter(f.value));
    else if (f.kind === 'metadata') conditions.push(metadataFilter(f.key, f.value));
  }
  if (q.from !== undefined) conditions.push(sql`s.created_at >= ${q.from}`);
  if (q.to !== undefined) conditions.push(sql`s.created_at <= ${q.to}`);
  // Relevance order over the FTS5 rows alone is the hot path: no per-match row lookup.
  if (conditions.length === 0 && q.sort === 'relevance') return searchByRelevance(db, q, fts, account);
  return searchFiltered(db, q, await narrowed(db, q, fts, account), conditions);
}

/**
 * Above this many matches of the query's words, a filtered search finds its candidates through the
 * filters' doclists (below); up to it, reading each match's row is cheaper than walking those
 * doclists, which hold a large part of the account (at 1,000,000 objects, p50 2.3 against 5.1 ms
 * for 165 matches, 36 against 13 ms for 10,000: docs/benchmarks.md).
 */
export const NARROW_ABOVE = 256;

/**
 * `fts` narrowed to the rows that can pass the query's filters, where FTS5 can tell (filterMatch)
 * and the query has more than NARROW_ABOVE matches (an FTS5 count that stops there): the query's
 * MATCH ANDed with the filters' phrases gives the candidates from doclists, so only their rows are
 * looked up, and bm25 (which keeps the query's own MATCH, so scores do not change) runs only on
 * them. `+rowid` keeps the set out of FTS5's plan, as in searchByRelevance.
 */
async function narrowed(
  db: Db,
  q: SearchQuery,
  fts: RawBuilder<unknown>,
  { range, tag }: AccountRows,
): Promise<RawBuilder<unknown>> {
  const filters = filterMatch(q.filters, tag);
  if (filters === null) return fts;
  const { rows } = await sql<{ n: number }>`
    SELECT count(*) AS n FROM (SELECT 1 FROM search_fts WHERE ${fts} LIMIT +${NARROW_ABOVE + 1})`.execute(db);
  if (Number(rows[0]?.n ?? 0) <= NARROW_ABOVE) return fts;
  return sql`${fts} AND +search_fts.rowid IN (SELECT rowid FROM search_fts
    WHERE search_fts MATCH ${`${compileMatch(q.plan, tag)} AND ${filters}`}
    AND rowid BETWEEN ${range[0]} AND ${range[1]})`;
}

/** A page under filters, dates or a sort other than relevance: each candidate's row is read. */
async function searchFiltered(
  db: Db,
  q: SearchQuery,
  fts: RawBuilder<unknown>,
  conditions: RawBuilder<unknown>[],
): Promise<SearchPage> {
  const where = sql.join([sql`s.account_id = ${q.accountId}`, ...conditions], sql` AND `);
  const desc = q.order === 'desc';
  const order = {
    relevance: desc ? sql`score DESC, s.doc ASC` : sql`score ASC, s.doc DESC`,
    date: desc ? sql`s.created_at DESC, s.id DESC` : sql`s.created_at ASC, s.id ASC`,
    title: desc ? sql`s.title_sort DESC, s.id DESC` : sql`s.title_sort ASC, s.id ASC`,
  }[q.sort];
  // CROSS JOIN fixes the loop order: the FTS5 match drives and rows are looked up by key; left to
  // itself the planner may scan by date and run the MATCH once per row. The window count gives the
  // total from the same pass: looking up each match's row is most of the work.
  const { rows: page } = await sql<{ id: string; score: number; total: number }>`
    SELECT s.id AS id, ${SCORE} AS score, count(*) OVER () AS total
    FROM (${ranked(fts)}) r
    CROSS JOIN search_documents s ON s.doc = r.doc
    WHERE ${where}
    ORDER BY ${order}
    LIMIT +${q.limit} OFFSET ${q.offset}`.execute(db);
  const shown = await resultRows(
    db,
    q.accountId,
    page.map((p) => p.id),
  );
  const hits = page.flatMap((p) => {
    const row = shown.get(p.id);
    return row ? [{ id: p.id, score: p.score, row }] : [];
  });
  if (page.length > 0) return { hits, total: Number(page[0]!.total) };
  return withTotal(q, hits, async () => {
    const count = await sql<{ n: number }>`
      SELECT count(*) AS n FROM search_fts
      CROSS JOIN search_documents s ON s.doc = search_fts.rowid
      WHERE ${fts} AND ${where}`.execute(db);
    return Number(count.rows[0]?.n ?? 0);
  });
}

/** The shown fields of the page's objects, by id; content cut to what the excerpt reads (FETCH_CHARS). */
async function resultRows(db: Db, accountId: string, ids: string[]): Promise<Map<string, ResultRow>> {
  if (ids.length === 0) return new Map();
  const { rows } = await sql<ResultRow & { id: string }>`
    SELECT id, title, type, created_at, substr(content, 1, ${FETCH_CHARS}) AS content
    FROM data_objects WHERE account_id = ${accountId} AND id IN (${sql.join(ids)})`.execute(db);
  return new Map(rows.map((r) => [r.id, r]));
}

const ranked = (fts: RawBuilder<unknown>) => sql`
  SELECT search_fts.rowid AS doc,
    bm25(search_fts, ${sql.raw(RANK_WEIGHTS)}) AS b,
    bm25(search_fts, ${sql.raw(TITLE_WEIGHTS)}) AS bt,
    bm25(search_fts, ${sql.raw(TAGS_WEIGHTS)}) AS bg
  FROM search_fts WHERE ${fts}`;

/**
 * Ranks in FTS5 alone, then looks up the page's ids by key. (`+account_id` still filters but keeps
 * the planner off the account index, which it would otherwise walk end to end.)
 *
 * The title and tag tiers order first. For a query of one word or wildcard (one leaf) those tiers
 * are exactly the matches of the leaf restricted to the title and tag columns, so an FTS5 count
 * tells whether they fill the requested page (`order=desc`); when they do, bm25 runs only on them
 * instead of on every match. The MATCH, and so bm25, is the same as without the cut: the page is
 * the same.
 */
async function searchByRelevance(
  db: Db,
  q: SearchQuery,
  fts: RawBuilder<unknown>,
  account: AccountRows,
): Promise<SearchPage> {
  if (q.plan.kind === 'stems' && q.plan.stems.length > 1) {
    const page = await phrasePage(db, q, q.plan, account);
    if (page !== null) return page;
  }
  const { range } = account;
  const order = q.order === 'desc' ? sql`score DESC, r.doc ASC` : sql`score ASC, r.doc DESC`;
  const tiers = q.order === 'desc' ? tierMatch(q.plan, account.tag) : null;
  let total: number | undefined;
  let only = sql``;
  if (tiers !== null) {
    const inTiers = sql`search_fts MATCH ${tiers} AND search_fts.rowid BETWEEN ${range[0]} AND ${range[1]}`;
    if ((await countMatches(db, inTiers)) >= q.offset + q.limit) {
      // The page is full, so the total is needed anyway. `+rowid` keeps the set out of FTS5's plan
      // (passed down, it would rerun the MATCH once per member).
      total = await countMatches(db, fts);
      only = sql`AND +search_fts.rowid IN (SELECT rowid FROM search_fts WHERE ${inTiers})`;
    }
  }
  const { rows: page } = await sql<{ doc: number; score: number }>`
    SELECT r.doc AS doc, ${SCORE} AS score FROM (${ranked(fts)} ${only}) r
    ORDER BY ${order} LIMIT +${q.limit} OFFSET ${q.offset}`.execute(db);
  const docs = page.map((r) => r.doc);
  // The page's ids and shown fields by key, in one statement.
  const { rows } =
    docs.length === 0
      ? { rows: [] }
      : await sql<ResultRow & { doc: number; id: string }>`
          SELECT s.doc, s.id, d.title, d.type, d.created_at,
            substr(d.content, 1, ${FETCH_CHARS}) AS content
          FROM search_documents s
          CROSS JOIN data_objects d ON d.account_id = s.account_id AND d.id = s.id
          WHERE s.doc IN (${sql.join(docs)}) AND +s.account_id = ${q.accountId}`.execute(db);
  const byDoc = new Map(rows.map((r) => [r.doc, r]));
  const hits = page.flatMap((p) => {
    const r = byDoc.get(p.doc);
    if (!r) return [];
    const row = { title: r.title, type: r.type, created_at: r.created_at, content: r.content };
    return [{ id: r.id, score: p.score, row }];
  });
  if (total !== undefined) return { hits, total };
  return withTotal(q, hits, () => countMatches(db, fts));
}

/**
 * A query that is one phrase, with up to `matches` matches, is ranked in the service
 * (phrase-rank.ts) instead of by FTS5's bm25, whose own count of the phrase's rows costs as much
 * again as the match; with more, or more than `bytes` of their content to
 * read, bm25 ranks as for any other query. (Mutable for tests, which compare both ways.)
 */
export const phraseRankLimits = { matches: 100, bytes: 512 * 1024 };

/** How many pages phrasePage has ranked in this process (tests: the path was taken). */
export const phraseRanked = { pages: 0 };

/**
 * The page of a query that is one phrase (`leaf`), ranked in the service: the same order, tiers and
 * total as the bm25 statement (phrase-rank.ts), or null when the phrase has too many matches (or
 * too much content) for that and bm25 should rank it.
 */
async function phrasePage(
  db: Db,
  q: SearchQuery,
  leaf: Leaf & { kind: 'stems' },
  { range, tag }: AccountRows,
): Promise<SearchPage | null> {
  const { rows: matches } = await sql<{ doc: number }>`
    SELECT rowid AS doc FROM search_fts WHERE search_fts MATCH ${compileMatch(leaf, tag)}
    AND rowid BETWEEN ${range[0]} AND ${range[1]} LIMIT +${phraseRankLimits.matches + 1}`.execute(db);
  if (matches.length > phraseRankLimits.matches) return null;
  if (matches.length === 0) return { hits: [], total: 0 };
  // Each match's text as it was indexed (only when all of it is small enough to read here) and its
  // token count as FTS5 keeps it; the table's row count and token total as bm25 reads them.
  const { rows } = await sql<
    ResultRow & { doc: number; id: string; tags: string; metadata: string; sz: Uint8Array; fits: number }
  >`
    SELECT s.doc, s.id, d.title, d.type, d.created_at, d.content, d.tags, d.metadata, z.sz,
      sum(octet_length(d.content)) OVER () <= ${phraseRankLimits.bytes} AS fits
    FROM search_documents s
    CROSS JOIN data_objects d ON d.account_id = s.account_id AND d.id = s.id
    CROSS JOIN search_fts_docsize z ON z.id = s.doc
    WHERE s.doc IN (${sql.join(matches.map((m) => m.doc))}) AND +s.account_id = ${q.accountId}`.execute(db);
  if (rows.some((r) => !r.fits)) return null;
  const { rows: totals } = await sql<{ block: Uint8Array }>`
    SELECT block FROM search_fts_data WHERE id = 1`.execute(db);
  const [tableRows = 0, ...columnTotals] = totals[0] ? readVarints(totals[0].block) : [];
  if (tableRows === 0) return null;
  const avgTokens = columnTotals.reduce((a, b) => a + b, 0) / tableRows;
  // The phrase's IDF counts the account's matches, as bm25's does: only the account's rows hold
  // its tagged tokens (compile-sqlite.ts accountTag).
  const idf = phraseIdf(tableRows, matches.length);
  const ranked = rows.map((r) => {
    const doc = buildIndexDocument({ ...r, account_id: q.accountId });
    const counts = phraseCounts(doc, leaf.fields, leaf.stems, sharedStem);
    const tokens = readVarints(r.sz).reduce((a, b) => a + b, 0);
    const b = phraseBm25(counts, fieldWeight, tokens, avgTokens, idf);
    // As SCORE computes it in SQL.
    const tier = (counts.has('title') ? 4 : 0) + (counts.has('tags') ? 2 : 0);
    return { r, score: (tier + 1.0 - 5.0 / (10.0 - b)) / 7.0 };
  });
  phraseRanked.pages++;
  const sign = q.order === 'desc' ? 1 : -1;
  ranked.sort((x, y) => sign * (y.score - x.score || x.r.doc - y.r.doc));
  const hits = ranked.slice(q.offset, q.offset + q.limit).map(({ r, score }) => ({
    id: r.id,
    score,
    row: {
      title: r.title,
      type: r.type,
      created_at: r.created_at,
      content: firstChars(r.content, FETCH_CHARS),
    },
  }));
  return { hits, total: rows.length };
}

/** The first `n` characters (code points, as SQLite's substr counts them) of `s`. */
function firstChars(s: string, n: number): string {
  if (s.length <= n) return s;
  let units = 0;
  for (let i = 0; i < n && units < s.length; i++) units += s.codePointAt(units)! > 0xffff ? 2 : 1;
  return s.slice(0, units);
}

/** How many FTS5 rows satisfy `where` (a MATCH and its rowid range). */
async function countMatches(db: Db, where: RawBuilder<unknown>): Promise<number> {
  const { rows } = await sql<{ n: number }>`SELECT count(*) AS n FROM search_fts WHERE ${where}`.execute(db);
  return Number(rows[0]?.n ?? 0);
}

/** A short page tells the total; only a full or an empty later page needs counting (cheaper than a window). */
async function withTotal(
  q: SearchQuery,
  hits: SearchHit[],
  count: () => Promise<number>,
): Promise<SearchPage> {
  if (hits.length > 0 && hits.length < q.limit) return { hits, total: q.offset + hits.length };
  if (hits.length === 0 && q.offset === 0) return { hits, total: 0 };
  return { hits, total: await count() };
}
