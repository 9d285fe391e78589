import type { Kysely } from 'kysely';
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
  // A new overload (two more arguments): the previous release's 15-argument call keeps working
  // during a rolling deploy (docs/deployment.md "Migrations").
  await searchPageDefinition(ORDER, { phrases: true }).execute(db);
}
