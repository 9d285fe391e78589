import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../types.ts';
import { searchPageDefinition } from './0007-search-speed.ts';
import { ORDER } from './0008-search-ties.ts';

/**
 * PostgreSQL only: phrases are checked on the small in-row `rank` vector before the full `vector`.
 * A phrase recheck read every candidate's `vector`, most of them through TOAST; `rank` holds the
 * same stems at the same positions, up to 8 per stem, and now marks the stems it cut
 * (compile-postgres.ts `rankPhrases`). Rows indexed before this migration have no marks and are
 * still checked on `vector`, until they are written again.
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  if (dialect !== 'postgres') return;
  await sql`
    DROP FUNCTION search_page(text, tsquery, tsquery, tsquery, tsquery, text, jsonb, jsonb,
      timestamptz, timestamptz, text, boolean, integer, bigint, integer)`.execute(db);
  await searchPageDefinition(ORDER, { phrases: true }).execute(db);
}
