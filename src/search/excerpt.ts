// Search-result excerpts (decisions §6): about 30 words around the first match, matched words in
// <em>, everything else HTML-escaped, `…` where text was cut. Matching mirrors the database loosely:
// folded equality, same Porter stem, or a wildcard pattern.
import { isIndexable } from './document.ts';
import type { PositiveTerm } from './parser.ts';
import { foldText, foldWord, patternParts, splitWords, stemWord, WORD_SOURCE, wildcardTest } from './text.ts';

/** Only this much of a text is scanned for the first match; content can be megabytes. */
export const MAX_SCAN_CHARS = 200_000;
/**
 * How many characters (code points) of the content the databases return for an excerpt: one more
 * than the excerpt scans, so it can tell that the content goes on past the scanned part (and end
 * with `…`, and not show a word cut there as if it were whole).
 */
export const FETCH_CHARS = MAX_SCAN_CHARS + 1;
const DEFAULT_WORDS = 30;
const MAX_WORDS = 200;
/** Words whose test result a compiled term keeps (a page's texts rarely hold more distinct words). */
const MAX_REMEMBERED_WORDS = 50_000;
/** Display caps, so one giant "word" or run of punctuation cannot blow up an excerpt. */
const MAX_SHOWN_WORD = 60;
const MAX_SHOWN_GAP = 30;
const MAX_EDGE_PUNCT = 10;

/** A word of raw text: a letter or digit, then letters, digits and marks (text.ts WORD_SOURCE). */
const WORD = new RegExp(WORD_SOURCE, 'gu');
/** A character that continues a word before it. */
const WORD_CONTINUES = /^[\p{L}\p{N}\p{M}]/u;
const SPACES = /\s+/gu;
const HTML_SPECIAL = /[&<>"']/g;
const HTML_SPECIAL_ANY = /[&<>"']/;
const HTML_ENTITY: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** Escapes `& < > " '` for HTML text and attribute contexts. */
export function escapeHtml(s: string): string {
  return s.replace(HTML_SPECIAL, (c) => HTML_ENTITY[c]!);
}

/** One folded word of the text; two entries share a span when folding split a character (½). */
interface Entry {
  start: number;
  end: number;
  word: string;
}

type WordTest = (word: string) => boolean;

/** The terms of a query compiled for highlighting; compile once and reuse it for every result. */
export interface ExcerptMatcher {
  single: WordTest[];
  phrases: WordTest[][];
  /**
   * For each single test and each phrase's first test, in that order: a string that every word it
   * accepts contains (folded, possibly empty). A text without any of them has no match.
   */
  needles: string[];
}

/**
 * What every word with Porter stem `stem` (and the word that gave it) begins with: the stem less
 * its last two characters. The stemmer (the `stemmer` package, Porter's original algorithm) only
 * deletes endings or replaces them with a string that differs from the word's own letters in at
 * most two trailing characters (`-bility` -> `-ble`; `-y` -> `-i`, `-ing` -> `-e`, `-ency` ->
 * `-ence`: one), so the rest is the word's own beginning. test/search/excerpt.test.ts checks it over
 * every suffix rule.
 */
export function stemNeedle(stem: string): string {
  return stem.slice(0, Math.max(0, stem.length - 2));
}

/** Compiles the terms that highlight; its stem cache is shared by every text it is used on. */
export function compileExcerptTerms(terms: readonly PositiveTerm[]): ExcerptMatcher {
  const stems = new Map<string, string>();
  const stem = (w: string): string => {
    let s = stems.get(w);
    if (s === undefined) {
      s = stemWord(w);
      stems.set(w, s);
    }
    return s;
  };
  // A text repeats its words, and every result of a page is tested: a wildcard, which may scan
  // each word for several segments, answers each word once.
  const remembered = (test: WordTest): WordTest => {
    const known = new Map<string, boolean>();
    return (w) => {
      let hit = known.get(w);
      if (hit === undefined) {
        hit = test(w);
        if (known.size < MAX_REMEMBERED_WORDS) known.set(w, hit);
      }
      return hit;
    };
  };
  const exact = (target: string): WordTest => {
    const targetStem = stem(target);
    // Porter only rewrites endings, so a word and its stem share their first character: testing it
    // first skips stemming almost every word of the text.
    return (w) => isIndexable(w) && (w === target || (w[0] === targetStem[0] && stem(w) === targetStem));
  };
  const single: WordTest[] = [];
  const phrases: WordTest[][] = [];
  const singleNeedles: string[] = [];
  const phraseNeedles: string[] = [];
  const addWords = (words: string[]) => {
    if (words.length === 0) return;
    (words.length === 1 ? singleNeedles : phraseNeedles).push(stemNeedle(stem(words[0]!)));
    if (words.length === 1) single.push(exact(words[0]!));
    else phrases.push(words.map(exact));
  };
  for (const t of terms) {
    if (t.field !== null && t.field !== 'title' && t.field !== 'content' && t.field !== 'tags') continue;
    if (t.text !== undefined) {
      const text = foldText(t.text);
      if (t.wildcard && text.includes('*')) {
        if (text.replaceAll('*', '') !== '') {
          // Words longer than the index keeps never matched, so they are not highlighted either.
          const test = wildcardTest(text);
          single.push(remembered((w) => isIndexable(w) && test(w)));
          // Every word the pattern matches contains its longest literal run.
          singleNeedles.push(patternParts(text).longest);
        }
      } else addWords(splitWords(text));
    } else if (t.words !== undefined) addWords(t.words.flatMap((w) => splitWords(foldText(w))));
  }
  return { single, phrases, needles: [...singleNeedles, ...phraseNeedles] };
}

const NON_ASCII = /[\u0080-\uffff]/;

/** A lower-case ASCII letter or a digit (the text was lower-cased). */
function isWordCode(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 48 && c <= 57);
}

/**
 * Where in `lower` (the scanned text, ASCII only, lower-cased) the scan for the first match may
 * start, or -1 when nothing in it can match. In ASCII text the folded words are the lower-cased
 * runs of letters and digits, so a matching word holds one of the `needles`, and no word before
 * the one holding the first needle found can match. The scan starts `back` words before that word,
 * so the window around the first match (which reaches back at most that far) is the same as from
 * the start.
 */
function scanStart(lower: string, needles: readonly string[], back: number): number {
  let first = -1;
  for (const n of needles) {
    const at = lower.indexOf(n);
    if (at !== -1 && (first === -1 || at < first)) first = at;
  }
  if (first <= 0) return first;
  let at = first;
  for (let words = -1; at > 0 && words < back; ) {
    // Step back over separators to the end of the previous word, then over that word.
    while (at > 0 && !isWordCode(lower.charCodeAt(at - 1))) at--;
    if (at === 0) break;
    while (at > 0 && isWordCode(lower.charCodeAt(at - 1))) at--;
    words++;
  }
  return at;
}

/** Cuts `s` to about `max` characters (code points), keeping both ends around a `…`. */
function clip(s: string, max: number): string {
  if (s.length <= max) return s;
  const cps = Array.from(s);
  if (cps.length <= max) return s;
  const half = Math.floor(max / 2);
  return `${cps.slice(0, half).join('')}…${cps.slice(cps.length - half).join('')}`;
}

const HIGH_SURROGATE = /[\uD800-\uDBFF]/;

/**
 * The end (a UTF-16 index) of the part of `text` that is scanned: MAX_SCAN_CHARS characters counted
 * as code points, as the databases count the FETCH_CHARS they return (a character outside the BMP
 * is one, though two UTF-16 units).
 */
export function scanLimit(text: string): number {
  if (text.length <= MAX_SCAN_CHARS) return text.length;
  // Most text has no character outside the BMP in its scanned part: one unit each.
  if (!HIGH_SURROGATE.test(text.slice(0, MAX_SCAN_CHARS))) return MAX_SCAN_CHARS;
  let at = 0;
  for (let n = 0; n < MAX_SCAN_CHARS && at < text.length; n++) {
    const unit = text.charCodeAt(at);
    at += unit >= 0xd800 && unit <= 0xdbff && at + 1 < text.length ? 2 : 1;
  }
  return at;
}

/**
 * Whether a word of the scanned part that ends at `scanEnd` may go on past it: `text` (as the
 * database returned it, FETCH_CHARS) continues it there. Such a word is not shown as if whole.
 */
function cutAtScanEnd(text: string, end: number, scanEnd: number): boolean {
  return end === scanEnd && scanEnd < text.length && WORD_CONTINUES.test(text.slice(scanEnd, scanEnd + 2));
}

/**
 * Whether text follows an excerpt that ends at `to`: more than spaces, or anything past the scanned
 * part (the databases return FETCH_CHARS characters of a longer content, so what follows the scanned
 * part may be spaces there and words after them).
 */
function goesOn(text: string, to: number, scanEnd: number): boolean {
  return scanEnd < text.length || /\S/u.test(text.slice(to));
}

/**
 * An HTML excerpt of about `opts.words` words (default 30) of `text` around the first word that
 * matches one of `terms`, or null when nothing matches in the first MAX_SCAN_CHARS characters.
 */
export function buildExcerpt(
  text: string,
  terms: readonly PositiveTerm[] | ExcerptMatcher,
  opts: {
    words?: number;
    /** Scan every word from the start, without the needles (tests compare against it). */
    fullScan?: boolean;
  } = {},
): string | null {
  const want = Number.isFinite(opts.words)
    ? Math.min(MAX_WORDS, Math.max(1, Math.floor(opts.words!)))
    : DEFAULT_WORDS;
  const { single, phrases, needles } = Array.isArray(terms)
    ? compileExcerptTerms(terms as readonly PositiveTerm[])
    : (terms as ExcerptMatcher);
  if (single.length === 0 && phrases.length === 0) return null;
  const longestPhrase = phrases.reduce((m, p) => Math.max(m, p.length), 1);

  const scanEnd = scanLimit(text);
  const scanned = text.slice(0, scanEnd);

  const entries: Entry[] = [];
  const re = new RegExp(WORD.source, WORD.flags);
  // Most texts are ASCII, and most results of a one-word search match it only in the title: the
  // needles then skip the text, or the words before the first possible match, without splitting
  // and folding them one by one.
  if (!opts.fullScan && !NON_ASCII.test(scanned)) {
    const from = scanStart(scanned.toLowerCase(), needles, want + longestPhrase);
    if (from === -1) return null;
    re.lastIndex = from;
  }
  let exhausted = false;
  const more = (): boolean => {
    const m = exhausted ? null : re.exec(scanned);
    // A word the scan limit cuts is left out, with what follows it.
    if (!m || cutAtScanEnd(text, m.index + m[0].length, scanEnd)) {
      exhausted = true;
      return false;
    }
    const start = m.index;
    const end = start + m[0].length;
    for (const word of foldWord(m[0])) entries.push({ start, end, word });
    return true;
  };
  const phraseAt = (p: WordTest[], s: number): boolean =>
    s >= 0 && s + p.length <= entries.length && p.every((test, k) => test(entries[s + k]!.word));

  // Find the first match, judged by where it ends, so phrases need no lookahead.
  let anchor = -1;
  let anchorEnd = 0;
  for (let checked = 0; anchor < 0; checked++) {
    // A text word can fold to nothing (only marks), so one more() may add no entry.
    while (checked >= entries.length && more());
    if (checked >= entries.length) break;
    const w = entries[checked]!.word;
    if (single.some((test) => test(w))) anchor = checked;
    for (const p of phrases) {
      if (anchor < 0 && phraseAt(p, checked - p.length + 1)) anchor = checked - p.length + 1;
    }
    anchorEnd = checked + 1;
  }
  if (anchor < 0) return null;

  let start = Math.max(0, anchor - Math.floor(want / 3));
  // Read enough words to fill the window and to see phrases that straddle its end.
  while (entries.length < start + want + longestPhrase && more());
  let end = Math.min(entries.length, start + want);
  if (end - start < want) start = Math.max(0, end - want);
  end = Math.max(end, anchorEnd);

  const marked = new Array<boolean>(end - start).fill(false);
  for (let i = start; i < end; i++) {
    const w = entries[i]!.word;
    if (single.some((test) => test(w))) marked[i - start] = true;
  }
  for (const p of phrases) {
    for (let s = Math.max(0, start - p.length + 1); s < end; s++) {
      if (!phraseAt(p, s)) continue;
      for (let k = Math.max(s, start); k < Math.min(s + p.length, end); k++) marked[k - start] = true;
    }
  }

  const from = entries[start]!.start - edgePunctuationBefore(text, entries[start]!.start);
  const to = entries[end - 1]!.end + edgePunctuationAfter(text, entries[end - 1]!.end);
  // Most windows hold nothing to escape: one test instead of one per word and gap.
  const escaped = HTML_SPECIAL_ANY.test(text.slice(from, to)) ? escapeHtml : (t: string) => t;
  let out = /\S/u.test(text.slice(0, from)) ? '…' : '';
  let cursor = from;
  for (let i = start; i < end; ) {
    const e = entries[i]!;
    // Entries from one text word (folding split it) are shown once, highlighted if any matched.
    let hit = false;
    for (; i < end && entries[i]!.start === e.start; i++) hit ||= marked[i - start]!;
    out += escaped(clip(text.slice(cursor, e.start).replace(SPACES, ' '), MAX_SHOWN_GAP));
    const shown = escaped(clip(text.slice(e.start, e.end), MAX_SHOWN_WORD));
    out += hit ? `<em>${shown}</em>` : shown;
    cursor = e.end;
  }
  out += escaped(text.slice(cursor, to).replace(SPACES, ' '));
  if (goesOn(text, to, scanEnd)) out += '…';
  return out;
}

// Punctuation glued to an edge word ("(Hello", "end.") is kept when a space or the text edge
// bounds it; otherwise it belongs to the neighbouring word and stays out.
// (A mark there is no word's: a word takes the marks that follow it.)
const PUNCT_BEFORE_AT_START = /(?:^|\s)([^\s\p{L}\p{N}]*)$/u;
const PUNCT_BEFORE = /\s([^\s\p{L}\p{N}]*)$/u;
const PUNCT_AFTER_AT_END = /^([^\s\p{L}\p{N}]*)(?:\s|$)/u;
const PUNCT_AFTER = /^([^\s\p{L}\p{N}]*)\s/u;

function edgePunctuationBefore(text: string, at: number): number {
  const lead = text.slice(Math.max(0, at - MAX_EDGE_PUNCT - 1), at);
  const m = (at === lead.length ? PUNCT_BEFORE_AT_START : PUNCT_BEFORE).exec(lead);
  return m ? m[1]!.length : 0;
}

function edgePunctuationAfter(text: string, at: number): number {
  const tail = text.slice(at, at + MAX_EDGE_PUNCT + 1);
  const m = (at + tail.length === text.length ? PUNCT_AFTER_AT_END : PUNCT_AFTER).exec(tail);
  return m ? m[1]!.length : 0;
}

/**
 * The first `opts.words` words (default 30) of `text`, HTML-escaped, with `…` where it was cut: the
 * excerpt of an object whose match was in no shown field (a tag, a metadata key, its type).
 */
export function leadingExcerpt(text: string, opts: { words?: number } = {}): string {
  const want = Number.isFinite(opts.words)
    ? Math.min(MAX_WORDS, Math.max(1, Math.floor(opts.words!)))
    : DEFAULT_WORDS;
  const scanEnd = scanLimit(text);
  const re = new RegExp(WORD.source, WORD.flags);
  const scanned = text.slice(0, scanEnd);
  let out = '';
  let cursor = -1;
  let shown = 0;
  for (let m = re.exec(scanned); m && shown < want; m = re.exec(scanned), shown++) {
    if (cutAtScanEnd(text, m.index + m[0].length, scanEnd)) break;
    if (cursor < 0) cursor = m.index - edgePunctuationBefore(text, m.index);
    out += escapeHtml(clip(text.slice(cursor, m.index).replace(SPACES, ' '), MAX_SHOWN_GAP));
    out += escapeHtml(clip(m[0], MAX_SHOWN_WORD));
    cursor = m.index + m[0].length;
  }
  if (cursor < 0) return escapeHtml(clip(text.trim().replace(SPACES, ' '), MAX_SHOWN_WORD));
  const to = cursor + edgePunctuationAfter(text, cursor);
  out += escapeHtml(text.slice(cursor, to));
  return goesOn(text, to, scanEnd) ? `${out}…` : out;
}
