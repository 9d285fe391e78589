// What the index holds for one data object, computed in JS for both dialects: folded words per
// field. Tokenizing here (not with FTS5's or PostgreSQL's tokenizers) makes both databases, the
// query compiler and the excerpt highlighter agree on what a word and its stem are.
import type { DataObjectsTable } from '../db/types.ts';
import { foldText, splitWords, stemWord } from './text.ts';

/** The text fields the index keeps: `title`, `tags`, `content` and the indexed metadata keys. */
export const TEXT_FIELDS = ['title', 'tags', 'content', 'author', 'status', 'description'] as const;
export type TextField = (typeof TEXT_FIELDS)[number];

/** Metadata keys whose values are searchable (decisions §6). */
export const META_FIELDS = ['author', 'status', 'description'] as const;

/** What free text (no `field:`) matches. */
export const FREE_TEXT_FIELDS: readonly TextField[] = ['title', 'tags', 'content'];

/** The values `type` can take; `type:` terms match them exactly. */
export const DATA_TYPES = ['document', 'note', 'record'] as const;

/**
 * Longer "words" (hashes, base64) are not indexed: no one searches for them by hand. Characters
 * are code points (a character outside the BMP is one, as everywhere the API counts them).
 */
export const MAX_INDEXED_WORD_CHARS = 128;

/** Whether a word is short enough to index: at most MAX_INDEXED_WORD_CHARS code points. */
export function isIndexable(word: string): boolean {
  if (word.length <= MAX_INDEXED_WORD_CHARS) return true;
  // A code point is one or two UTF-16 units.
  if (word.length > 2 * MAX_INDEXED_WORD_CHARS) return false;
  let chars = 0;
  for (const _ of word) if (++chars > MAX_INDEXED_WORD_CHARS) return false;
  return true;
}

/**
 * How an index decides which words it keeps. Since migration 0026 `isIndexable`; before it, words
 * of up to MAX_INDEXED_WORD_CHARS UTF-16 units (migrations rebuild entries those releases wrote).
 */
export type WordFits = (word: string) => boolean;

/** One object as the index sees it. Each field is a list of segments (one per tag) that phrases never span. */
export interface IndexDocument {
  accountId: string;
  id: string;
  type: string;
  fields: Record<TextField, string[][]>;
}

/** What the index needs of a data object row. */
export type IndexedRow = Pick<
  DataObjectsTable,
  'account_id' | 'id' | 'title' | 'title_sort' | 'type' | 'content' | 'tags' | 'metadata' | 'created_at'
>;

type TextRow = Pick<IndexedRow, 'account_id' | 'id' | 'title' | 'type' | 'content' | 'tags' | 'metadata'>;

const ASCII_TEXT = /^[\0-\x7F]*$/;
const ASCII_NON_WORD = /[^a-z0-9]+/;

/** The words of raw text as the index keeps them: folded, split, overlong ones left out. */
export function indexedWords(text: string): string[] {
  return allWords(text, foldText).filter((w) => w !== '' && isIndexable(w));
}

/** Every word of raw text, folded, overlong ones too (and empty strings between separators). */
function allWords(text: string, fold: (s: string) => string): string[] {
  // Plain ASCII (most text) folds to its lower case, and its words are its runs of letters and
  // digits: the same words, five times faster than the general path. (Not for a migration's
  // frozen fold, which need not agree with today's on ASCII.)
  return fold === foldText && ASCII_TEXT.test(text)
    ? text.toLowerCase().split(ASCII_NON_WORD)
    : splitWords(fold(text));
}

/**
 * How an overlong word is left out of the index. `break` (since migration 0025): it ends the
 * segment, so the words on either side of it are not next to each other and no phrase spans it.
 * `join`: the words on either side became neighbours, and `"token expired"` found the text
 * "token <a 200-character hash> expired". Older releases wrote `join` entries; migrations before
 * 0025 rebuild those.
 */
export type LongWords = 'break' | 'join';

/**
 * The segments of raw text as the index keeps them: its words (as {@link indexedWords}), split
 * where an overlong word stood (`break`), with no empty segment apart from the one of a text
 * without words. Text without an overlong word between two words is one segment, as before.
 */
export function indexedSegments(
  text: string,
  fold: (s: string) => string = foldText,
  longWords: LongWords = 'break',
  fits: WordFits = isIndexable,
): string[][] {
  const segments: string[][] = [];
  let current: string[] = [];
  for (const w of allWords(text, fold)) {
    if (w === '') continue;
    if (fits(w)) current.push(w);
    else if (longWords === 'break' && current.length > 0) {
      segments.push(current);
      current = [];
    }
  }
  if (current.length > 0 || segments.length === 0) segments.push(current);
  return segments;
}

/**
 * Folds and splits every indexed field of a data object row. `fold`, `longWords` and `fits` are
 * for migrations only: the folding, splitting and word length an older release indexed with, to
 * rebuild the entry it wrote.
 */
export function buildIndexDocument(
  row: TextRow,
  fold: (s: string) => string = foldText,
  longWords: LongWords = 'break',
  fits: WordFits = isIndexable,
): IndexDocument {
  const tags = JSON.parse(row.tags) as string[];
  const metadata = JSON.parse(row.metadata) as Record<string, unknown>;
  const segments = (text: string) => indexedSegments(text, fold, longWords, fits);
  const meta = (key: string): string[][] => {
    const v = Object.hasOwn(metadata, key) ? metadata[key] : undefined;
    return typeof v === 'string' ? segments(v) : [];
  };
  return {
    accountId: row.account_id,
    id: row.id,
    type: row.type,
    fields: {
      title: segments(row.title),
      tags: tags.flatMap(segments),
      content: segments(row.content),
      author: meta('author'),
      status: meta('status'),
      description: meta('description'),
    },
  };
}

/** The distinct words of a document, sorted: its contribution to the account's vocabulary. */
export function distinctWords(doc: IndexDocument): string[] {
  const set = new Set<string>();
  for (const field of TEXT_FIELDS) {
    for (const segment of doc.fields[field]) for (const w of segment) set.add(w);
  }
  return [...set].sort();
}

/** A memoizing stemmer for one document or query; English text repeats most of its words. */
export function cachedStemmer(): (word: string) => string {
  const cache = new Map<string, string>();
  return (word) => {
    let s = cache.get(word);
    if (s === undefined) {
      s = stemWord(word);
      cache.set(word, s);
    }
    return s;
  };
}

const SHARED_STEMS_MAX = 100_000;
const sharedStems = new Map<string, string>();

/**
 * stemWord memoized for the whole process, for work at search time that stems the words of many
 * objects (phrase-rank.ts): a corpus repeats its words. Bounded: cleared when full.
 */
export function sharedStem(word: string): string {
  let s = sharedStems.get(word);
  if (s === undefined) {
    s = stemWord(word);
    if (sharedStems.size >= SHARED_STEMS_MAX) sharedStems.clear();
    sharedStems.set(word, s);
  }
  return s;
}

/** Word -> +1 / -1 (or a batch's sum): how an account's vocabulary changes. */
export type VocabularyDelta = Map<string, number>;

/**
 * How the account's vocabulary changes when a document's words go from `before` to `after`,
 * in word order. (A Map, not an object: a plain object with a property per word goes through a
 * hidden-class transition per word.)
 */
export function vocabularyDelta(before: readonly string[], after: readonly string[]): VocabularyDelta {
  const delta = new Map<string, number>();
  for (const w of before) delta.set(w, -1);
  for (const w of after) {
    if (delta.get(w) === -1) delta.delete(w);
    else delta.set(w, 1);
  }
  const out: VocabularyDelta = new Map();
  // The default sort compares UTF-16 code units, as `<` does.
  for (const w of [...delta.keys()].sort()) out.set(w, delta.get(w)!);
  return out;
}

/** The delta as a JSON object for the databases' JSON table functions; words with 0 are left out. */
export function vocabularyJson(delta: VocabularyDelta): { json: string; removes: boolean } {
  let json = '';
  let removes = false;
  for (const [w, d] of delta) {
    if (d === 0) continue;
    if (d < 0) removes = true;
    json += `${json === '' ? '{' : ','}${JSON.stringify(w)}:${d}`;
  }
  return { json: json === '' ? '{}' : `${json}}`, removes };
}
