import { baseLetters } from './base-letters.ts';

const ASCII = /^[\0-\x7F]*$/;

/**
 * The key titles sort by: "A to Z, case-insensitive" (decisions §5), with accents and other
 * combining marks ignored, compatibility forms (full-width letters, ligatures) read as their plain
 * letters, and letters with a stroke and ligatures that NFKD leaves whole read as their base
 * letters, as search folds them (src/lib/base-letters.ts): `Äpfel` sorts beside `apfel`, `Łódź`
 * beside `lodz`, `Straße` as `strasse`, not after `zoo`; Greek final sigma is `σ`. Equal keys fall
 * back to the id. An ASCII title's key is the title lower-cased.
 *
 * Migrations 0012 and 0027 hold frozen copies of this function (as each release had it) for the
 * rows written before them; change it only together with a new migration that does the same.
 */
export function titleSortKey(title: string): string {
  if (ASCII.test(title)) return title.toLowerCase();
  // Base letters after lower-casing, so capitals (`ẞ`, `Ø`, `Ł`) and a word-final `Σ` (which
  // lower-cases to `ς`) are read as well.
  return baseLetters(
    title
      .normalize('NFKD')
      .replace(/\p{M}+/gu, '')
      .toLowerCase(),
  );
}
