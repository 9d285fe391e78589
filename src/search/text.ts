// Text folding and stemming shared by the query parser, the indexer and the excerpt builder, so a
// query word and a text word compare equal exactly when the search treats them as the same word.
import { stemmer } from 'stemmer';
import { baseLetters } from '../lib/base-letters.ts';

/**
 * Accents: the generic combining diacritical marks that NFKD splits off accented Latin, Greek and
 * Cyrillic letters (U+0300-036F and its supplement and extended blocks, marks for symbols, half
 * marks), and the optional vowel and cantillation points of Hebrew (U+0591-05C7) and Arabic
 * (harakat U+064B-065F, U+0670, Quranic signs U+0610-061A and U+06D6-06ED), which most text leaves
 * out. Folding removes them, so `CAFE` finds `Café` and `كتب` finds `كَتَبَ`. The other marks of a
 * script's own spelling (Indic vowel signs and viramas, Thai, the kana voicing marks of NFKD `が`)
 * are part of the word: `काम` ("work") is not `कम` ("less"). (Marks only: a code point of those
 * ranges that is not a mark stays what it was.)
 */
const ACCENTS =
  /(?=\p{M})[\u0300-\u036F\u1AB0-\u1AFF\u1DC0-\u1DFF\u20D0-\u20FF\uFE20-\uFE2F\u0591-\u05C7\u0610-\u061A\u064B-\u065F\u0670\u06D6-\u06ED]/gu;
/**
 * Variation selectors choose a glyph (❤ or ❤️, an ideograph's variant, Mongolian's free variation
 * selectors), never another word.
 */
const VARIATION_SELECTORS = /[\uFE00-\uFE0F\u180B-\u180D\u180F]|\uDB40[\uDD00-\uDDEF]/g;
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
/**
 * A word: a letter or digit, then letters, digits and marks (the marks folding keeps belong to the
 * letter before them). A mark with no letter or digit before it (after a space or a symbol) is no
 * word and separates.
 */
export const WORD_SOURCE = '[\\p{L}\\p{N}][\\p{L}\\p{N}\\p{M}]*';
const WORD = new RegExp(WORD_SOURCE, 'gu');
/** A word of a query where `*` is a wildcard: WORD, with `*` anywhere in it (marks after one too). */
const PATTERN_WORD = /[\p{L}\p{N}*][\p{L}\p{N}\p{M}*]*/gu;
const STAR_RUN = /\*{2,}/g;

/**
 * Case- and accent-insensitive form of `s`: NFKD, accents (ACCENTS) and variation selectors
 * removed, lower case with final sigma as `σ`, letters with strokes and ligatures as their base
 * letters (src/lib/base-letters.ts, shared with the title sort key).
 */
export function foldText(s: string): string {
  // Lower-casing after NFKD catches compatibility forms that decompose to capitals (ℌ -> H);
  // lower-casing can itself produce marks (İ -> i + U+0307), hence the second pass. Unpaired
  // surrogates (which request validation refuses anyway) become spaces first, as they separated
  // words before: removing a mark between two of them would pair them into a character that NFKD
  // has not seen, and folding would no longer be idempotent. A symbol that decomposes to letters
  // becomes a space first, so `Windows™` folds to `windows` (not `windowstm`), as the excerpt,
  // which splits before it folds, sees it too. `ς` becomes `σ` after lower-casing, which chooses
  // between them by the letters around a `Σ`: the text `ΝΟΜΟΣ:ΑΤΤΙΚΗ` lower-cases to `νομοσ`, the
  // query word `ΝΟΜΟΣ` alone to `νομος`.
  return baseLetters(
    s
      .replace(LONE_SURROGATES, ' ')
      .replace(NON_ASCII_SEPARATOR, separate)
      .normalize('NFKD')
      .toLowerCase()
      .normalize('NFKD')
      .replace(ACCENTS, '')
      .replace(VARIATION_SELECTORS, ''),
  );
}

const ASCII_WORD = /^[A-Za-z0-9]+$/;

/** `splitWords(foldText(raw))` for one raw word, with a fast path for plain ASCII (most words). */
export function foldWord(raw: string): string[] {
  return ASCII_WORD.test(raw) ? [raw.toLowerCase()] : splitWords(foldText(raw));
}

/** Words of already folded text (WORD_SOURCE); everything else separates. */
export function splitWords(folded: string): string[] {
  return folded.match(WORD) ?? [];
}

/**
 * Words of already folded text where `*` is a wildcard inside a word: runs of `**` collapse to one
 * `*`, and words made only of stars are dropped (they would match everything).
 */
export function splitPatternWords(folded: string): string[] {
  const words: string[] = [];
  for (const raw of folded.match(PATTERN_WORD) ?? []) {
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
