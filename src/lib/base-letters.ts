// Letters that NFKD leaves whole but that search (src/search/text.ts) and the title sort key
// (src/lib/sort-key.ts) both read as other letters, so the two never disagree on what a title says.

/**
 * Latin letters that carry a stroke or are ligatures, which NFKD leaves whole, as their base
 * letters (as PostgreSQL's `unaccent` and search engines fold them): `Straße` is found by
 * `strasse`, `Łódź` by `lodz`, `København` by `kobenhavn`, `Æsir` by `aesir`. Lower case only:
 * callers lower-case first (`ẞ` becomes `ß`, `Ø` becomes `ø`).
 */
export const STROKED: Readonly<Record<string, string>> = {
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
const STROKED_LETTERS = new RegExp(`[${Object.keys(STROKED).join('')}]`, 'g');
/** Greek final sigma: lower-casing gives `ς` or `σ` by context, so both read as `σ`. */
const FINAL_SIGMA = /ς/g;

/** Lower-cased `s` with final sigma as `σ` and the STROKED letters as their base letters. */
export function baseLetters(s: string): string {
  return s.replace(FINAL_SIGMA, 'σ').replace(STROKED_LETTERS, (c) => STROKED[c]!);
}
