// The search index on PostgreSQL: tsvector rows written inside the caller's transaction, the
// ranked query over a GIN index that leads with account_id, and wildcard expansion through the
// account's vocabulary (pg_trgm).
import { sql } from 'kysely';
import { VOCAB_STRIPES } from '../db/migrations/0018-vocab-stripes.ts';
import type { Db } from '../db/types.ts';
import {
  buildVectors,
  compileTsquery,
  fieldTsquery,
  filterTsquery,
  rankPhrases,
  rankTsquery,
  tierTsquery,
} from './compile-postgres.ts';
import { type IndexDocument, type IndexedRow, type VocabularyDelta, vocabularyJson } from './document.ts';
import { FETCH_CHARS } from './excerpt.ts';
import { layoutOf } from './layout.ts';
import type { SearchPage, SearchQuery } from './search-index.ts';

/** The words an indexed document adds to the account's vocabulary (content may stop at the size budget). */
export const wordsOf = (doc: IndexDocument): string[] => buildVectors(doc).words;

/** Adds the object's row; returns the distinct words it indexed. */
export async function insertDocument(db: Db, row: IndexedRow, doc: IndexDocument): Promise<string[]> {
  const { vector, head, rank, pairs, words } = buildVectors(doc);
  // Migrations before 0019 rewrite entries into a table without `pairs` (layout.ts).
  const sketch = layoutOf(db).pairSketch;
  await sql`
    INSERT INTO search_documents
      (account_id, id, type, title_sort, created_at, tags, metadata, vector, head, rank${sql.raw(sketch ? ', pairs' : '')})
    VALUES (${row.account_id}, ${row.id}, ${row.type}, ${row.title_sort}, ${row.created_at}::timestamptz,
      ${row.tags}::jsonb, ${row.metadata}::jsonb, ${vector}::tsvector, ${head}::tsvector, ${rank}::tsvector
      ${sketch ? sql`, ${pairs}::bytea` : sql``})`.execute(db);
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
 * Applies word -> change to the account's vocabulary in one call of search_vocab_apply (migration
 * 0018): additions go to this session's stripe, so concurrent writers of one account do not wait
 * on each other's rows for the words they share; a removal takes from a row above zero and deletes
 * the rows it empties, so a word no object holds leaves in the same transaction. Word order
 * throughout, so writers cannot deadlock.
 */
export async function applyVocabulary(db: Db, accountId: string, delta: VocabularyDelta): Promise<void> {
  const { json } = vocabularyJson(delta);
  if (json === '{}') return;
  await sql`
    SELECT search_vocab_apply(${accountId}, ${json}::jsonb,
      (pg_backend_pid() % ${sql.lit(VOCAB_STRIPES)})::smallint)`.execute(db);
}

/**
 * The same change on the layout before 0018 (one row per word): migrations 0015-0017 rewrite
 * entries before 0018 has run.
 */
export async function applyVocabularyUnstriped(
  db: Db,
  accountId: string,
  delta: VocabularyDelta,
): Promise<void> {
  const { json, removes } = vocabularyJson(delta);
  if (json === '{}') return;
  await sql`
    INSERT INTO search_vocab (account_id, word, docs)
    SELECT ${accountId}, key COLLATE "C", value::int FROM jsonb_each_text(${json}::jsonb) ORDER BY 2
    ON CONFLICT (account_id, word) DO UPDATE SET docs = search_vocab.docs + excluded.docs`.execute(db);
  if (!removes) return;
  await sql`
    DELETE FROM search_vocab
    WHERE account_id = ${accountId} AND docs <= 0
      AND word IN (SELECT jsonb_object_keys(${json}::jsonb) COLLATE "C")`.execute(db);
}

/**
 * Up to `max` of the account's words that may match a `*` pattern, most frequent first (pg_trgm or
 * B-tree); a word's count is the sum of its stripes.
 */
export async function expandPattern(
  db: Db,
  accountId: string,
  pattern: string,
  max: number,
): Promise<string[]> {
  const { rows } = await sql<{ word: string }>`
    SELECT word FROM search_vocab
    WHERE account_id = ${accountId} AND word LIKE ${pattern.replaceAll('*', '%')}
    GROUP BY word ORDER BY sum(docs) DESC, word LIMIT ${max}`.execute(db);
  return rows.map((r) => r.word);
}

interface PageRow {
  id: string | null;
  score: number | null;
  total: number;
  title: string;
  type: string;
  created_at: string;
  content: string;
}

/** The filters as search_page arguments, or null when two of them contradict each other. */
function filterArgs(filters: SearchQuery['filters']) {
  let type: string | null = null;
  const tags = new Set<string>();
  const meta = new Map<string, string>();
  for (const f of filters) {
    if (f.kind === 'type') {
      if (type !== null && type !== f.value) return null;
      type = f.value;
    } else if (f.kind === 'tag') tags.add(f.value);
    else {
      // Metadata values are strings (decisions §5), so containment is equality.
      if (meta.has(f.key) && meta.get(f.key) !== f.value) return null;
      meta.set(f.key, f.value);
    }
  }
  return {
    type,
    tags: tags.size > 0 ? JSON.stringify([...tags]) : null,
    meta: meta.size > 0 ? JSON.stringify(Object.fromEntries(meta)) : null,
  };
}

/**
 * One page of hits with their objects' fields, and the total, all within `q.accountId`: one call
 * of search_page (migration 0007), whose plan is made once per connection.
 */
export async function search(db: Db, q: SearchQuery): Promise<SearchPage> {
  const args = filterArgs(q.filters);
  if (args === null) return { hits: [], total: 0 };
  const narrow = filterTsquery(q.filters);
  const phrases = rankPhrases(q.plan);
  const match = phrases?.match ?? compileTsquery(q.plan);
  const query = narrow === null ? match : `(${match}) & ${narrow}`;
  // Only for the default order, and without filters: the total is then every match of `query`.
  const unfiltered = q.filters.length === 0 && q.from == null && q.to == null;
  const tiers = q.sort === 'relevance' && q.order === 'desc' && unfiltered ? tierTsquery(q.plan) : null;
  // Score in (0, 1]: title hits above tag hits above the rest, then ts_rank (r >= 0) squashed into
  // the tier as 0.5 + 0.5 * r / (r + 0.5) = 1 - 0.25 / (r + 0.5).
  const { rows } = await sql<PageRow>`
    SELECT * FROM search_page(${q.accountId}, ${query}::tsquery,
      ${fieldTsquery(q.plan, 'title')}::tsquery, ${fieldTsquery(q.plan, 'tags')}::tsquery,
      ${rankTsquery(q.plan)}::tsquery, ${args.type}::text, ${args.tags}::jsonb, ${args.meta}::jsonb,
      ${q.from ?? null}::timestamptz, ${q.to ?? null}::timestamptz, ${q.sort}::text,
      ${q.order === 'desc'}::boolean, ${q.limit}::int4, ${q.offset}::int8, ${FETCH_CHARS}::int4,
      ${phrases?.phrases ?? null}::tsquery, ${phrases?.gate ?? null}::tsquery, ${tiers}::tsquery,
      ${phrases?.vectorPhrases ?? null}::tsquery,
      ${phrases && phrases.pairs.length > 0 ? phrases.pairs : null}::int4[])`.execute(db);
  const hits = rows.flatMap((r) =>
    r.id === null
      ? []
      : [
          {
            id: r.id,
            score: Number(r.score),
            row: { title: r.title, type: r.type, created_at: r.created_at, content: r.content },
          },
        ],
  );
  return { hits, total: Number(rows[0]?.total ?? 0) };
}
