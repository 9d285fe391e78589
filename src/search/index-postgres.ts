// The search index on PostgreSQL: tsvector rows written inside the caller's transaction, the
// ranked query over a GIN index that leads with account_id, and wildcard expansion through the
// account's vocabulary (pg_trgm).
import { type RawBuilder, sql } from 'kysely';
import type { Db } from '../db/types.ts';
import { buildVectors, compileTsquery, fieldTsquery, RANK_WEIGHTS, rankTsquery } from './compile-postgres.ts';
import type { IndexDocument, IndexedRow } from './document.ts';
import type { SearchPage, SearchQuery } from './search-index.ts';

/** The words an indexed document adds to the account's vocabulary (content may stop at the size budget). */
export const wordsOf = (doc: IndexDocument): string[] => buildVectors(doc).words;

/** Adds the object's row; returns the distinct words it indexed. */
export async function insertDocument(db: Db, row: IndexedRow, doc: IndexDocument): Promise<string[]> {
  const { vector, head, rank, words } = buildVectors(doc);
  await sql`
    INSERT INTO search_documents
      (account_id, id, type, title_sort, created_at, tags, metadata, vector, head, rank)
    VALUES (${row.account_id}, ${row.id}, ${row.type}, ${row.title_sort}, ${row.created_at}::timestamptz,
      ${row.tags}::jsonb, ${row.metadata}::jsonb, ${vector}::tsvector, ${head}::tsvector, ${rank}::tsvector)`.execute(
    db,
  );
  return words;
}

/** Removes the object from the index; false when it was not indexed. */
export async function removeDocument(db: Db, doc: IndexDocument): Promise<boolean> {
  const { rows } = await sql`
    DELETE FROM search_documents WHERE account_id = ${doc.accountId} AND id = ${doc.id}
    RETURNING id`.execute(db);
  return rows.length > 0;
}

/**
 * Applies word -> +1/-1 to the account's vocabulary in one statement, in word order, so two writers
 * always lock shared words in the same order (no deadlock); emptied words are deleted.
 */
export async function applyVocabulary(
  db: Db,
  accountId: string,
  delta: Record<string, number>,
): Promise<void> {
  const json = JSON.stringify(delta);
  if (json === '{}') return;
  await sql`
    INSERT INTO search_vocab (account_id, word, docs)
    SELECT ${accountId}, key COLLATE "C", value::int FROM jsonb_each_text(${json}::jsonb) ORDER BY 2
    ON CONFLICT (account_id, word) DO UPDATE SET docs = search_vocab.docs + excluded.docs`.execute(db);
  if (!Object.values(delta).some((d) => d < 0)) return;
  await sql`
    DELETE FROM search_vocab
    WHERE account_id = ${accountId} AND docs <= 0
      AND word IN (SELECT jsonb_object_keys(${json}::jsonb) COLLATE "C")`.execute(db);
}

/** Up to `max` of the account's words that may match a `*` pattern, most frequent first (pg_trgm or B-tree). */
export async function expandPattern(
  db: Db,
  accountId: string,
  pattern: string,
  max: number,
): Promise<string[]> {
  const { rows } = await sql<{ word: string }>`
    SELECT word FROM search_vocab
    WHERE account_id = ${accountId} AND word LIKE ${pattern.replaceAll('*', '%')}
    ORDER BY docs DESC, word LIMIT ${max}`.execute(db);
  return rows.map((r) => r.word);
}

const tier = (query: string | null, points: number): RawBuilder<unknown> =>
  query === null ? sql`0` : sql`CASE WHEN s.head @@ ${query}::tsquery THEN ${sql.lit(points)} ELSE 0 END`;

/** One page of hits (id and score) and the total, all within `q.accountId`. */
export async function search(db: Db, q: SearchQuery): Promise<SearchPage> {
  const conditions: RawBuilder<unknown>[] = [
    sql`s.account_id = ${q.accountId}`,
    sql`s.vector @@ ${compileTsquery(q.plan)}::tsquery`,
  ];
  for (const f of q.filters) {
    if (f.kind === 'type') conditions.push(sql`s.type = ${f.value}`);
    else if (f.kind === 'tag') conditions.push(sql`s.tags @> jsonb_build_array(${f.value}::text)`);
    else conditions.push(sql`(s.metadata ->> ${f.key}::text) = ${f.value}`);
  }
  if (q.from !== undefined) conditions.push(sql`s.created_at >= ${q.from}::timestamptz`);
  if (q.to !== undefined) conditions.push(sql`s.created_at <= ${q.to}::timestamptz`);
  const where = sql.join(conditions, sql` AND `);
  const desc = q.order === 'desc';
  const order = {
    relevance: desc ? sql`score DESC, id ASC` : sql`score ASC, id DESC`,
    date: desc ? sql`created_at DESC, id DESC` : sql`created_at ASC, id ASC`,
    title: desc ? sql`title_sort DESC, id DESC` : sql`title_sort ASC, id ASC`,
  }[q.sort];
  const rankQuery = rankTsquery(q.plan);
  const rank =
    rankQuery === null ? sql`0` : sql`ts_rank(${RANK_WEIGHTS}::float4[], s.rank, ${rankQuery}::tsquery)`;
  // Score in (0, 1]: title hits above tag hits above the rest, then ts_rank (r >= 0) squashed into
  // the tier as 0.5 + 0.5 * r / (r + 0.5) = 1 - 0.25 / (r + 0.5).
  const score = sql`(${tier(fieldTsquery(q.plan, 'title'), 4)} + ${tier(fieldTsquery(q.plan, 'tags'), 2)}
    + 1.0 - 0.25 / (${rank} + 0.5)) / 7.0`;

  // The inner query reads each match's vectors once and keeps a narrow row; OFFSET 0 keeps it from
  // being flattened, so the window count (which rides along the sort) never stores vectors.
  const { rows } = await sql<{ id: string; score: number; total: number }>`
    SELECT id, score, count(*) OVER () AS total
    FROM (
      SELECT s.id, s.created_at, s.title_sort, (${score})::float8 AS score
      FROM search_documents s
      WHERE ${where}
      OFFSET 0
    ) x
    ORDER BY ${order}
    LIMIT ${q.limit} OFFSET ${q.offset}`.execute(db);
  if (rows.length > 0 || q.offset === 0) {
    return { hits: rows.map((r) => ({ id: r.id, score: r.score })), total: Number(rows[0]?.total ?? 0) };
  }
  // Past the last page: no row carries the total, so count on its own.
  const count = await sql<{ n: number }>`SELECT count(*) AS n FROM search_documents s WHERE ${where}`.execute(
    db,
  );
  return { hits: [], total: Number(count.rows[0]?.n ?? 0) };
}
