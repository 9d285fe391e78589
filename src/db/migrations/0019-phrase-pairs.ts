import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../types.ts';
import { searchPageDefinition } from './0007-search-speed.ts';
import { ORDER } from './0008-search-ties.ts';

/**
 * PostgreSQL only: phrase candidates ruled out by a sketch of each row's adjacent stem pairs. A
 * phrase's candidates are the rows holding all its words (GIN), and each one's `rank` vector was
 * read to check the words' positions: for two common words, thousands of rows, most of them long
 * objects whose `rank` is several kilobytes compressed or out of line. `pairs` is a Bloom filter of
 * the pairs of adjacent stems in the row's title, tags and content (compile-postgres.ts
 * `PairSketch`, at most 1 KB, kept in the row), and search_page takes the phrases' pair hashes
 * (`p_pairs`): a row whose sketch lacks one of their bits cannot hold the phrase.
 *
 * Additive: the column is nullable, and a row without a sketch (written by the previous release, or
 * before this migration) is checked as before; the 19-argument search_page of 0017 stays for the
 * previous release (docs/deployment.md "Migrations"). Rows get their sketch when they are next
 * written; nothing is rewritten here.
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  if (dialect !== 'postgres') return;
  await sql`ALTER TABLE search_documents ADD COLUMN pairs bytea`.execute(db);
  // In the row (compressing random bits gains nothing), beside the small columns of 0011.
  await sql`ALTER TABLE search_documents ALTER COLUMN pairs SET STORAGE MAIN`.execute(db);
  await searchPageDefinition(ORDER, { phrases: true, tiers: true, spill: true, pairs: true }).execute(db);
}
