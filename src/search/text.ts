// Text folding and stemming shared by the query parser, the indexer and the excerpt builder, so a
// query word and a text word compare equal exactly when the search treats them as the same word.
import { stemmer } from 'stemmer';

const COMBINING_MARKS = /\p{M}/gu;
/** Characters outside ASCII that are not part of a word: symbols, punctuation, spaces. */
const NON_ASCII_SEPARATOR = /[^\p{L}\p{N}\p{M}\0-\x7F]/gu;
/**
 * A symbol stays a separator even when its compatibility form holds letters (™ -> TM, ℃ -> °C,
 * ㎒ -> MHz): its letters are not a word, as the excerpt's words never include them. Symbols that
 * do not decompose are left for splitWords, which keeps folding idempotent.
 */
const separate = (c: string) => (c.normalize('NFKD') === c ? c : ' ');
/** Unpaired UTF-16 surrogates (a valid pair is one astral code point, not `Cs`, under the `u` flag). */
const LONE_SURROGATES = /\p{Cs}/gu;
const NON_WORD = /[^\p{L}\p{N}]+/u;
const NON_WORD_OR_STAR = /[^\p{L}\p{N}*]+/u;
const STAR_RUN = /\*{2,}/g;

/**
 * Latin letters that carry a stroke or are ligatures, which NFKD leaves whole, as their base
 * letters (as PostgreSQL's `unaccent` and search engines fold them): `Straße` is found by
 * `strasse`, `Łódź` by `lodz`, `København` by `kobenhavn`, `Æsir` by `aesir`. Lower case only:
 * folding lower-cases first (`ẞ` becomes `ß`, `Ø` becomes `ø`).
 */
const STROKED: Record<string, string> = {
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

/**
 * Case- and accent-insensitive form of `s`: NFKD, combining marks removed, lower case, letters
 * with strokes and ligatures as their base letters (STROKED).
 */
export function foldText(s: string): string {
  // Lower-casing after NFKD catches compatibility forms that decompose to capitals (ℌ -> H);
  // lower-casing can itself produce marks (İ -> i + U+0307), hence the second pass. Unpaired
  // surrogates (which request validation refuses anyway) become spaces first, as they separated
  // words before: removing a mark between two of them would pair them into a character that NFKD
  // has not seen, and folding would no longer be idempotent. A symbol that decomposes to letters
  // becomes a space first, so `Windows™` folds to `windows` (not `windowstm`), as the excerpt,
  // which splits before it folds, sees it too.
  return s
    .replace(LONE_SURROGATES, ' ')
    .replace(NON_ASCII_SEPARATOR, separate)
    .normalize('NFKD')
    .toLowerCase()
    .normalize('NFKD')
    .replace(COMBINING_MARKS, '')
    .replace(STROKED_LETTERS, (c) => STROKED[c]!);
}

const ASCII_WORD = /^[A-Za-z0-9]+$/;

/** `splitWords(foldText(raw))` for one raw word, with a fast path for plain ASCII (most words). */
export function foldWord(raw: string): string[] {
  return ASCII_WORD.test(raw) ? [raw.toLowerCase()] : splitWords(foldText(raw));
}

/** Words of already folded text: runs of letters and digits; everything else separates. */
export function splitWords(folded: string): string[] {
  return folded.split(NON_WORD).filter((w) => w !== '');
}

/**
 * Words of already folded text where `*` is a wildcard inside a word: runs of `**` collapse to one
 * `*`, and words made only of stars are dropped (they would match everything).
 */
export function splitPatternWords(folded: string): string[] {
  const words: string[] = [];
  for (const raw of folded.split(NON_WORD_OR_STAR)) {
    const w = raw.replace(STAR_RUN, '*');
    if (w !== '' && w !== '*') words.push(w);
  }
  return words;
}

/**
 * Whole-word glob match where `*` matches any run of characters (including none).
 * Greedy leftmost matching of the star-free segments is exact for `*`-only patterns and needs no
 * regex built from user input.
 */
export function matchesWildcard(pattern: string, word: string): boolean {
  return wildcardTest(pattern)(word);
}

/** `matchesWildcard` with `pattern` split once, for testing many words. */
export function wildcardTest(pattern: string): (word: string) => boolean {
  const parts = pattern.split('*');
  if (parts.length === 1) return (word) => pattern === word;
  const first = parts[0]!;
  const last = parts[parts.length - 1]!;
  const inner = parts.slice(1, -1);
  return (word) => {
    if (word.length < first.length + last.length) return false;
    if (!word.startsWith(first) || !word.endsWith(last)) return false;
    let at = first.length;
    const limit = word.length - last.length;
    for (const part of inner) {
      const found = word.indexOf(part, at);
      if (found === -1 || found + part.length > limit) return false;
      at = found + part.length;
    }
    return true;
  };
}

/** Longer words are kept unstemmed; nothing that long is an English word. */
export const MAX_STEM_CHARS = 64;

/** The Porter stem of an already folded word, as the index and the highlighter both use it. */
export function stemWord(word: string): string {
  return word.length > MAX_STEM_CHARS ? word : stemmer(word);
}

/** The literal start of a `*` pattern (before its first `*`) and its longest literal run. */
export function patternParts(pattern: string): { prefix: string; longest: string } {
  const parts = pattern.split('*');
  let longest = '';
  for (const p of parts) if (Array.from(p).length > Array.from(longest).length) longest = p;
  return { prefix: parts[0] ?? '', longest };
}
