import type { Kysely } from 'kysely';
import { foldText } from '../../search/text.ts';
import type { MigrationProgress } from '../database.ts';
import type { Dialect } from '../types.ts';
import { foldAfter0015, refold } from './0015-symbol-words.ts';

/**
 * Letters with a stroke and ligatures that NFKD leaves whole (ß, æ, œ, ø, ł, đ, ð, þ, ħ, ı, ŧ) now
 * fold to their base letters (src/search/text.ts), so `strasse` finds `Straße` and `lodz` finds
 * `Łódź`. As 0015 did for symbols, this rewrites the index entry of every object whose words
 * change, from the folding 0015 wrote with to this release's, resumably (see `refold`).
 */
export async function up(db: Kysely<unknown>, dialect: Dialect, progress?: MigrationProgress): Promise<void> {
  await refold(db, dialect, '0016-stroked-letters', foldAfter0015, foldText, { onBatch: progress });
}
