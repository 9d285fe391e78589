import { type Kysely, type RawBuilder, sql } from 'kysely';
import type { Dialect } from '../types.ts';

/**
 * Faster search on PostgreSQL (docs/search.md "How it works"); nothing changes on SQLite.
 *
 * - `vector`, `head` and `rank` are kept in the row (compressed) unless the row would not fit in a
 *   page: ranking and phrase rechecks then read one heap page per match instead of TOAST chunks.
 *   Rows written before this migration keep their layout until they are rewritten.
 * - `search_page`: the ranked page, its total and the page's object fields in one call, planned
 *   once per connection (a generic plan: the shape never changes, only the values), instead of
 *   planning a new statement on every search.
 */
/**
 * The result order: score, date or sort title, then the id (ascending for relevance desc and for
 * ascending date/title, descending otherwise), so pages never overlap.
 */
const ORDER = sql.raw(`
  CASE WHEN p_sort = 'relevance' THEN CASE WHEN p_desc THEN -m.score ELSE m.score END END,
  CASE WHEN p_sort = 'date' AND p_desc THEN m.created_at END DESC,
  CASE WHEN p_sort = 'date' AND NOT p_desc THEN m.created_at END,
  CASE WHEN p_sort = 'title' AND p_desc THEN m.title_sort END DESC,
  CASE WHEN p_sort = 'title' AND NOT p_desc THEN m.title_sort END,
  CASE WHEN (p_sort = 'relevance') = p_desc THEN m.id END,
  m.id DESC`);

export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  if (dialect !== 'postgres') return;
  await sql`
    ALTER TABLE search_documents
      ALTER COLUMN vector SET STORAGE MAIN,
      ALTER COLUMN head SET STORAGE MAIN,
      ALTER COLUMN rank SET STORAGE MAIN`.execute(db);
  // Every filter is an argument that may be null (no filter); sort and order choose among CASE
  // keys, so one plan serves every query. A page past the end returns one row with only `total`.
  await searchPageDefinition(ORDER).execute(db);
}

/** What later migrations add to `search_page`. */
export interface SearchPageOptions {
  /**
   * 0009: `p_phrases` and `p_gate`, phrases checked on `rank` first and on `vector` only where
   * `rank` cannot decide (compile-postgres.ts `rankPhrases`).
   */
  phrases?: boolean;
  /**
   * 0010: `p_tiers`, the title and tag tiers of a one-leaf query (compile-postgres.ts
   * `tierTsquery`): when they hold the whole page, only they are ranked.
   */
  tiers?: boolean;
  /**
   * 0017: `p_vector_phrases`, the phrases as checked on `vector` (with its spill lexemes,
   * compile-postgres.ts `SPILL_LEVELS`); `p_phrases` stays the check on `rank`.
   */
  spill?: boolean;
  /**
   * 0019: `p_pairs`, SKETCH_PROBES hashes of the phrases' adjacent stem pairs (compile-postgres.ts
   * `sketchProbes`): a candidate whose `pairs` sketch lacks one of their bits is ruled out before
   * its `rank` is read. Null tests nothing; so does a row without a sketch.
   */
  pairs?: boolean;
}

/** `search_page` with the result order `order` (SQL over `m`; 0008 replaces 0007's). */
export function searchPageDefinition(
  order: RawBuilder<unknown>,
  options: SearchPageOptions = {},
): RawBuilder<unknown> {
  const args = [
    ...(options.phrases ? ['p_phrases tsquery', 'p_gate tsquery'] : []),
    ...(options.tiers ? ['p_tiers tsquery'] : []),
    ...(options.spill ? ['p_vector_phrases tsquery'] : []),
    ...(options.pairs ? ['p_pairs int4[]'] : []),
  ];
  const vectorPhrases = sql.raw(options.spill ? 'p_vector_phrases' : 'p_phrases');
  // Each `s.rank @@` decompresses `rank` again, so most candidates are ruled out by the gate alone.
  // The sketch's bits are tested first: a few operations on a column in the row.
  const sketch = options.pairs
    ? sql.raw(
        `(p_pairs IS NULL OR s.pairs IS NULL OR (${[1, 2, 3, 4]
          .map((i) => `get_bit(s.pairs, p_pairs[${i}] & (octet_length(s.pairs) * 8 - 1)) = 1`)
          .join(' AND ')})) AND `,
      )
    : sql``;
  const phraseCheck = options.phrases
    ? sql`AND (p_phrases IS NULL OR (${sketch}s.rank @@ p_gate AND (s.rank @@ p_phrases OR s.vector @@ ${vectorPhrases})))`
    : sql``;
  const filters = sql`
          AND (p_type IS NULL OR s.type = p_type)
          AND (p_tags_all IS NULL OR s.tags @> p_tags_all)
          AND (p_meta IS NULL OR s.metadata @> p_meta)
          AND (p_from IS NULL OR s.created_at >= p_from)
          AND (p_to IS NULL OR s.created_at <= p_to)
          ${phraseCheck}`;
  const score = sql`
          ((CASE WHEN s.head @@ p_title THEN 4 ELSE 0 END
            + CASE WHEN s.head @@ p_tags THEN 2 ELSE 0 END
            + 1.0 - 0.25 / (coalesce(ts_rank('{0.1, 0.2, 0.4, 1.0}'::float4[], s.rank, p_rank), 0) + 0.5))
            / 7.0)::float8`;
  // The tiers hold the page: rank only them, and count every match apart. The count still reads
  // each match's heap page (PostgreSQL's bitmap scans no longer skip all-visible pages), but it
  // neither decompresses nor ranks anything.
  const tierPage = options.tiers
    ? sql`
      IF p_tiers IS NOT NULL AND (
        SELECT count(*) FROM (
          SELECT FROM search_documents s
          WHERE s.account_id = p_account AND s.head @@ p_tiers
          LIMIT p_offset + p_limit) t) >= p_offset + p_limit THEN
        RETURN QUERY
        WITH matched AS MATERIALIZED (
          SELECT s.id, s.created_at, s.title_sort, ${score} AS score
          FROM search_documents s
          WHERE s.account_id = p_account AND s.head @@ p_tiers
        ), page AS (
          SELECT m.id, m.score, m.created_at, m.title_sort
          FROM matched m
          ORDER BY ${order}
          LIMIT p_limit OFFSET p_offset
        )
        SELECT m.id, m.score,
          (SELECT count(*) FROM search_documents s WHERE s.account_id = p_account AND s.vector @@ p_query),
          d.title, d.type, m.created_at, substr(d.content, 1, p_scan)
        FROM page m JOIN data_objects d ON d.account_id = p_account AND d.id = m.id
        ORDER BY ${order};
        RETURN;
      END IF;`
    : sql``;
  return sql`
    CREATE OR REPLACE FUNCTION search_page(
      p_account text, p_query tsquery, p_title tsquery, p_tags tsquery, p_rank tsquery,
      p_type text, p_tags_all jsonb, p_meta jsonb, p_from timestamptz, p_to timestamptz,
      p_sort text, p_desc boolean, p_limit integer, p_offset bigint, p_scan integer${sql.raw(args.map((a) => `, ${a}`).join(''))})
    RETURNS TABLE (id text, score float8, total bigint, title text, type text,
      created_at timestamptz, content text)
    LANGUAGE plpgsql STABLE
    SET plan_cache_mode = force_generic_plan
    AS $fn$
    #variable_conflict use_column
    BEGIN${tierPage}
      RETURN QUERY
      WITH matched AS MATERIALIZED (
        SELECT s.id, s.created_at, s.title_sort, ${score} AS score
        FROM search_documents s
        WHERE s.account_id = p_account AND s.vector @@ p_query${filters}
      ), page AS (
        SELECT m.id, m.score, m.created_at, m.title_sort, count(*) OVER () AS total
        FROM matched m
        ORDER BY ${order}
        LIMIT p_limit OFFSET p_offset
      )
      SELECT m.id, m.score, m.total, d.title, d.type, m.created_at, substr(d.content, 1, p_scan)
      FROM page m JOIN data_objects d ON d.account_id = p_account AND d.id = m.id
      ORDER BY ${order};
      IF NOT FOUND AND p_offset > 0 THEN
        RETURN QUERY
        SELECT NULL::text, NULL::float8, count(*), NULL::text, NULL::text, NULL::timestamptz, NULL::text
        FROM search_documents s
        WHERE s.account_id = p_account AND s.vector @@ p_query${filters};
      END IF;
    END
    $fn$`;
}
