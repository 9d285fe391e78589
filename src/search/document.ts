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

/** Longer "words" (hashes, base64) are not indexed: no one searches for them by hand. */
export const MAX_INDEXED_WORD_CHARS = 128;

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

function words(text: string): string[] {
  return splitWords(foldText(text)).filter((w) => w.length <= MAX_INDEXED_WORD_CHARS);
}

/** Folds and splits every indexed field of a data object row. */
export function buildIndexDocument(row: TextRow): IndexDocument {
  const tags = JSON.parse(row.tags) as string[];
  const metadata = JSON.parse(row.metadata) as Record<string, unknown>;
  const meta = (key: string): string[][] => {
    const v = Object.hasOwn(metadata, key) ? metadata[key] : undefined;
    return typeof v === 'string' ? [words(v)] : [];
  };
  return {
    accountId: row.account_id,
    id: row.id,
    type: row.type,
    fields: {
      title: [words(row.title)],
      tags: tags.map(words),
      content: [words(row.content)],
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

/**
 * How the account's vocabulary changes when a document's words go from `before` to `after`:
 * word -> +1 / -1, keys sorted so concurrent writers lock vocabulary rows in the same order.
 */
export function vocabularyDelta(before: readonly string[], after: readonly string[]): Record<string, number> {
  const delta = new Map<string, number>();
  for (const w of before) delta.set(w, -1);
  for (const w of after) {
    if (delta.get(w) === -1) delta.delete(w);
    else delta.set(w, 1);
  }
  return Object.fromEntries([...delta].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}
