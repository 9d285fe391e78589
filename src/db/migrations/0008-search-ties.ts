import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../types.ts';
import { searchPageDefinition } from './0007-search-speed.ts';

/**
 * PostgreSQL only: relevance ties break by creation time before the id. Ordering the matches by
 * score and then the text id cost as much as ranking them (about 4.5 ms of 10 for 800 warm matches,
 * docs/benchmarks.md): one-term scores tie often, and every tie compared two ids as text. A
 * timestamp compares as an integer and rarely ties, so the id is almost never reached. Ids are
 * time-ordered, so the order of ties barely changes: oldest first under `order=desc`, as on SQLite
 * (insertion order), and the exact reverse under `order=asc`.
 */
export const ORDER = sql.raw(`
  CASE WHEN p_sort = 'relevance' THEN CASE WHEN p_desc THEN -m.score ELSE m.score END END,
  CASE WHEN p_sort = 'relevance' AND p_desc THEN m.created_at END,
  CASE WHEN p_sort = 'relevance' AND NOT p_desc THEN m.created_at END DESC,
  CASE WHEN p_sort = 'date' AND p_desc THEN m.created_at END DESC,
  CASE WHEN p_sort = 'date' AND NOT p_desc THEN m.created_at END,
  CASE WHEN p_sort = 'title' AND p_desc THEN m.title_sort END DESC,
  CASE WHEN p_sort = 'title' AND NOT p_desc THEN m.title_sort END,
  CASE WHEN (p_sort = 'relevance') = p_desc THEN m.id END,
  m.id DESC`);

export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  if (dialect !== 'postgres') return;
  await searchPageDefinition(ORDER).execute(db);
}
