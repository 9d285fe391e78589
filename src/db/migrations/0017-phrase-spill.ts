import { type Kysely, sql } from 'kysely';
import { buildIndexDocument } from '../../search/document.ts';
import type { MigrationProgress } from '../database.ts';
import type { Dialect } from '../types.ts';
import { searchPageDefinition } from './0007-search-speed.ts';
import { ORDER } from './0008-search-ties.ts';
import { rewriteEntries } from './0015-symbol-words.ts';
import { fitsBefore0026, foldBefore0026 } from './0026-word-folding.ts';

/**
 * PostgreSQL only: phrases after a word's 256th occurrence. A `tsvector` keeps at most 256
 * positions per lexeme, so a phrase that began after its word's 256th occurrence in an object was
 * not found. `vector` now writes the positions past the 256th to spill lexemes (`stem~2` ...,
 * compile-postgres.ts `SPILL_LEVELS`), and the phrase check on `vector` takes its own tsquery,
 * which lets each word of a phrase match its spills too. The 18-argument search_page of 0010 stays
 * for the release before this one (docs/deployment.md "Migrations").
 *
 * Entries written before have their stems cut at 256 positions; this rewrites them, resumably as
 * 0015 does (they are the same documents, now written with spills). Only objects with at least
 * 256 bytes of text can hold a word 256 times, and of those only entries with a stem at 256
 * positions are rewritten.
 */
export async function up(db: Kysely<unknown>, dialect: Dialect, progress?: MigrationProgress): Promise<void> {
  if (dialect !== 'postgres') return;
  await searchPageDefinition(ORDER, { phrases: true, tiers: true, spill: true }).execute(db);
  await rewriteEntries(
    db,
    dialect,
    '0017-phrase-spill',
    CUT,
    (row) => {
      // As releases before 0025 wrote entries (overlong words joined their neighbours), with the
      // folding and word length of releases before 0026.
      const doc = buildIndexDocument(row, foldBefore0026, 'join', fitsBefore0026);
      return { old: doc, next: doc };
    },
    { onBatch: progress },
  );
}

/** An object whose entry has a stem (not an exact word, `=word` or `key=word`) at 256 positions. */
const CUT = sql`
  octet_length(title) + octet_length(content) + octet_length(tags::text) + octet_length(metadata::text) >= 256
  AND EXISTS (
    SELECT FROM search_documents s, unnest(s.vector) u
    WHERE s.account_id = data_objects.account_id AND s.id = data_objects.id
      AND cardinality(u.positions) = 256 AND strpos(u.lexeme, '=') = 0)`;
