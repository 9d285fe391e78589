import { type Kysely, sql } from 'kysely';
import { buildIndexDocument, MAX_INDEXED_WORD_CHARS } from '../../search/document.ts';
import type { MigrationProgress } from '../database.ts';
import { recordSchemaBreak } from '../database.ts';
import type { Dialect } from '../types.ts';
import { rewriteEntries } from './0015-symbol-words.ts';
import { fitsBefore0026, foldBefore0026 } from './0026-word-folding.ts';

/**
 * A word too long to index (over 128 characters: a hash, a base64 blob) now breaks the text where
 * it stood (src/search/document.ts, `LongWords`). It used to be left out with its neighbours
 * joined, so `"token expired"` found "token <a 200-character hash> expired" as if the two words
 * were next to each other, on both databases. Entries written before keep the joined words, and
 * updating or deleting one on SQLite needs the tokens as they were written (FTS5's 'delete'), so
 * this rewrites the entry of every object whose segments change: removed as 'join' built it, added
 * as 'break' does. Only a field longer than 128 characters, or with a character outside ASCII, can
 * hold such a word; SQL finds those, and an entry whose segments are the same either way is left
 * alone. Resumable in batches, as 0015.
 *
 * Not additive: a process of the previous release would remove a rewritten entry with the joined
 * tokens, which on SQLite corrupts the index. It records a schema break (recordSchemaBreak), so a
 * release that knows schema breaks refuses to start against this schema.
 */
export async function up(db: Kysely<unknown>, dialect: Dialect, progress?: MigrationProgress): Promise<void> {
  // First: on SQLite each batch commits as it goes, so the break must be on record before the
  // first rewritten entry, for a release that checks breaks of migrations still under way.
  await recordSchemaBreak(db, '0025-long-word-breaks');
  // A field can hold an overlong word only if it is longer than 128 characters, or (folding can
  // lengthen a word, and a character outside the BMP counts twice) if it has a character outside
  // ASCII, as 0015 finds them.
  const candidate = ['title', 'content', 'tags', 'metadata']
    .map((c) =>
      dialect === 'postgres'
        ? `char_length(${c}::text) > ${MAX_INDEXED_WORD_CHARS} OR octet_length(${c}::text) <> char_length(${c}::text)`
        : `length(${c}) > ${MAX_INDEXED_WORD_CHARS} OR length(CAST(${c} AS BLOB)) <> length(${c})`,
    )
    .join(' OR ');
  await rewriteEntries(
    db,
    dialect,
    '0025-long-word-breaks',
    sql.raw(candidate),
    (row) => {
      // With the folding and word length of releases before 0026, which rewrites what this wrote.
      const old = buildIndexDocument(row, foldBefore0026, 'join', fitsBefore0026);
      const next = buildIndexDocument(row, foldBefore0026, 'break', fitsBefore0026);
      return JSON.stringify(old.fields) === JSON.stringify(next.fields) ? null : { old, next };
    },
    { onBatch: progress },
  );
}
