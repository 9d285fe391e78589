// The index tables as an older migration finds them. Migrations 0015 and 0017 rewrite index
// entries through the current indexer, before later migrations have changed the tables it writes.

/** What a transaction's index tables lack; a transaction not registered has everything. */
export interface IndexLayout {
  /** search_vocab has `stripe` (migration 0018): else one row per word. */
  stripedVocabulary: boolean;
  /** search_documents has `pairs` (migration 0019): else entries are written without it. */
  pairSketch: boolean;
  /** SQLite: search_fts tokens carry the account's tag (migration 0020): else they are bare words. */
  accountTags: boolean;
}

export const CURRENT: IndexLayout = { stripedVocabulary: true, pairSketch: true, accountTags: true };
const layouts = new WeakMap<object, IndexLayout>();

/** The layout `db` writes to. */
export const layoutOf = (db: object): IndexLayout => layouts.get(db) ?? CURRENT;

/** Runs `fn` with `trx`'s index writes in `layout`. */
export async function withIndexLayout<T>(trx: object, layout: IndexLayout, fn: () => Promise<T>): Promise<T> {
  layouts.set(trx, layout);
  try {
    return await fn();
  } finally {
    layouts.delete(trx);
  }
}
