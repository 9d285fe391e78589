import type { Kysely } from 'kysely';
import type { MigrationProgress } from '../database.ts';
import type { Dialect } from '../types.ts';
import { foldAfter0015, refold } from './0015-symbol-words.ts';
import { foldBefore0026 } from './0026-word-folding.ts';

/**
 * Letters with a stroke and ligatures that NFKD leaves whole (ß, æ, œ, ø, ł, đ, ð, þ, ħ, ı, ŧ) now
 * fold to their base letters (src/search/text.ts), so `strasse` finds `Straße` and `lodz` finds
 * `Łódź`. As 0015 did for symbols, this rewrites the index entry of every object whose words
 * change, from the folding 0015 wrote with to this release's, resumably (see `refold`). This
 * release's folding is `foldBefore0026` (it was `foldText` until 0026 changed that: 0026 rewrites
 * what this wrote, so this must not write with a later fold).
 */
export async function up(db: Kysely<unknown>, dialect: Dialect, progress?: MigrationProgress): Promise<void> {
  await refold(db, dialect, '0016-stroked-letters', foldAfter0015, foldBefore0026, { onBatch: progress });
}
