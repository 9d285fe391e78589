import { type Kysely, sql } from 'kysely';
import { buildIndexDocument } from '../../search/document.ts';
import type { MigrationProgress } from '../database.ts';
import { recordSchemaBreak } from '../database.ts';
import type { Dialect } from '../types.ts';
import { foldAfter0015, rewriteEntries } from './0015-symbol-words.ts';

/**
 * Three changes to the words the index keeps (src/search/text.ts, document.ts), on both databases:
 *
 * - Folding removes accents only (the generic combining diacritical marks), no longer every
 *   combining mark: the vowel signs of Indic scripts, Thai, Arabic and Hebrew marks, the kana
 *   voicing mark stay part of the word, so `काम` ("work") no longer finds `कम` ("less").
 * - Greek final sigma folds to `σ`: lower-casing the whole text chose `σ` or `ς` by context, so
 *   `ΝΟΜΟΣ:ΑΤΤΙΚΗ` was indexed as `νομοσ` and the query `ΝΟΜΟΣ` (`νομος`) missed it.
 * - A word's length is counted in code points: a word of 70 characters outside the BMP (140 UTF-16
 *   units) was left out as longer than 128.
 *
 * Entries written before hold the old words, and updating or deleting one needs the entry exactly
 * as it was written (FTS5's 'delete' takes the original tokens; the vocabulary counts its words),
 * so this rewrites the entry of every object whose words change: removed as the old rules built
 * it, added as the new ones do, resumably in batches as 0015 (`rewriteEntries`). Only text with a
 * character in AFFECTED can change; SQL finds those rows, and an entry whose words are the same
 * either way is left alone.
 *
 * Not additive: a process of the previous release would remove a rewritten entry with the old
 * tokens, which on SQLite corrupts the index, so it records a schema break first.
 */
export const NAME = '0026-word-folding';

/**
 * src/search/text.ts `foldText` from 0016 until this migration (a migration never changes): every
 * combining mark removed, final sigma left as lower-casing made it. Migrations 0016 to 0025 write
 * entries with it.
 */
export function foldBefore0026(s: string): string {
  // 0015's folding, then 0016's stroked letters and ligatures.
  return foldAfter0015(s).replace(/[ßæœøłđðþħıŧ]/g, (c) => STROKED_BEFORE_0026[c]!);
}

const STROKED_BEFORE_0026: Record<string, string> = {
  ß: 'ss',
  æ: 'ae',
  œ: 'oe',
  ø: 'o',
  ł: 'l',
  đ: 'd',
  ð: 'd',
  þ: 'th',
  ħ: 'h',
  ı: 'i',
  ŧ: 't',
};

/**
 * Which words the index kept before this migration: up to 128 UTF-16 units (a character outside
 * the BMP counted twice). Migrations before this one write entries with it.
 */
export const fitsBefore0026 = (word: string): boolean => word.length <= 128;

/**
 * Code point ranges holding every character whose words this migration can change: those whose
 * folding now keeps a mark (Hebrew, Arabic, Indic, Thai, ... and precomposed forms, such as kana
 * with a voicing mark, that decompose into one), Greek (sigma), and everything outside the BMP
 * (length in code points). A superset, broad ranges rather than the ~280 exact ones;
 * test/search/search-folding.test.ts checks it against every BMP character. Latin, Cyrillic,
 * punctuation, symbols, CJK ideographs and Hangul are outside it: text made only of those keeps
 * its words.
 */
export const AFFECTED: readonly (readonly [number, number])[] = [
  [0x0370, 0x03ff],
  [0x0483, 0x1cff],
  [0x2cef, 0x2dff],
  [0x302a, 0x30ff],
  [0xa66f, 0xabff],
  [0xfb1d, 0xffff],
  [0x10000, 0x10ffff],
];

const rangeClass = () =>
  AFFECTED.map(([a, b]) => `${String.fromCodePoint(a)}-${String.fromCodePoint(b)}`).join('');

/** A JS test for AFFECTED (the tests, and the same set as the SQL below). */
export const AFFECTED_CHAR = new RegExp(`[${rangeClass()}]`, 'u');

export async function up(db: Kysely<unknown>, dialect: Dialect, progress?: MigrationProgress): Promise<void> {
  // First: on SQLite each batch commits as it goes (as 0025).
  await recordSchemaBreak(db, NAME);
  // SQLite's GLOB and PostgreSQL's regular expressions compare code points in a `[a-b]` range.
  const candidate = sql.join(
    ['title', 'content', 'tags', 'metadata'].map((c) =>
      dialect === 'postgres'
        ? sql`${sql.ref(c)}::text ~ ${`[${rangeClass()}]`}`
        : sql`${sql.ref(c)} GLOB ${`*[${rangeClass()}]*`}`,
    ),
    sql` OR `,
  );
  await rewriteEntries(
    db,
    dialect,
    NAME,
    candidate,
    (row) => {
      const old = buildIndexDocument(row, foldBefore0026, 'break', fitsBefore0026);
      const next = buildIndexDocument(row);
      return JSON.stringify(old.fields) === JSON.stringify(next.fields) ? null : { old, next };
    },
    // The character test reads every row and selects few (about 100 µs an object on SQLite):
    // windows of 2,000 objects keep each batch short and its progress reported.
    { onBatch: progress, scanRows: 2000 },
  );
}
