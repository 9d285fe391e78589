import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../types.ts';
import { searchPageDefinition } from './0007-search-speed.ts';
import { ORDER } from './0008-search-ties.ts';

/**
 * PostgreSQL only: rank only the title and tag tiers when they hold the page, as SQLite does.
 * A one-word query ranked every match, reading each one's heap row; its title and tag tiers,
 * found through a GIN index on `head` (title and tag lexemes, a few dozen per row), usually hold
 * enough matches for the page, and the total is then counted from the `vector` index alone.
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  if (dialect !== 'postgres') return;
  await sql`CREATE INDEX search_documents_head_idx ON search_documents USING gin (account_id, head)`.execute(
    db,
  );
  // The 17-argument overload of 0009 was released together with this one and never called; the
  // 15-argument one stays for the release before them (docs/deployment.md "Migrations").
  await sql`
    DROP FUNCTION search_page(text, tsquery, tsquery, tsquery, tsquery, text, jsonb, jsonb,
      timestamptz, timestamptz, text, boolean, integer, bigint, integer, tsquery, tsquery)`.execute(db);
  await searchPageDefinition(ORDER, { phrases: true, tiers: true }).execute(db);
}
