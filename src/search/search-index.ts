// The one dialect switch of search: index maintenance called inside the data service's write
// transactions, wildcard expansion, and the ranked query. Everything above this file is dialect-free.
import { batchOf, beforeCommit } from '../db/group-commit.ts';
import type { Db, Dialect } from '../db/types.ts';
import {
  buildIndexDocument,
  type IndexDocument,
  type IndexedRow,
  type VocabularyDelta,
  vocabularyDelta,
} from './document.ts';
import * as postgres from './index-postgres.ts';
import * as sqlite from './index-sqlite.ts';
import { layoutOf } from './layout.ts';
import type { Plan } from './plan.ts';
import { matchesWildcard } from './text.ts';

/** An exact-match filter of `GET /search` (decisions §6). */
export type SearchFilter =
  | { kind: 'type'; value: string }
  | { kind: 'tag'; value: string }
  | { kind: 'metadata'; key: string; value: string };

export type SearchSort = 'relevance' | 'date' | 'title';

/** A resolved search within one account; `from`/`to` are inclusive ISO instants. */
export interface SearchQuery {
  accountId: string;
  plan: Plan;
  filters: SearchFilter[];
  from?: string;
  to?: string;
  sort: SearchSort;
  order: 'asc' | 'desc';
  limit: number;
  offset: number;
}

/** What a result shows of its object; `content` is cut to what the excerpt builder scans. */
export interface ResultRow {
  title: string;
  type: string;
  created_at: string;
  content: string;
}

export interface SearchHit {
  id: string;
  score: number;
  row: ResultRow;
}

export interface SearchPage {
  hits: SearchHit[];
  total: number;
}

/** At most this many of the account's words stand in for one suffix or infix wildcard. */
export const MAX_EXPANSIONS = 128;

/** At most this many suffix or infix wildcards per query: each costs a vocabulary lookup. */
export const MAX_EXPANDED_PATTERNS = 8;

const impl = (dialect: Dialect) => (dialect === 'postgres' ? postgres : sqlite);

/** Per group-commit batch: account -> word -> the batch's summed vocabulary change so far. */
const batchVocabulary = new WeakMap<object, Map<string, Map<string, number>>>();

/**
 * Applies a document's vocabulary change. Inside a batch (SQLite group commit, or a bulk load
 * through `asBatch`) the batch's changes are summed and applied once before its COMMIT: writes of
 * one batch share most of their words, so this upserts each word once per batch instead of once per
 * write. On PostgreSQL this also keeps a long transaction from updating one vocabulary row hundreds
 * of times, each update a new row version its successors must walk past. Both dialects upsert in
 * word order, so concurrent writers lock shared words in the same order.
 */
async function applyVocabulary(
  db: Db,
  dialect: Dialect,
  accountId: string,
  delta: VocabularyDelta,
): Promise<void> {
  const apply =
    dialect === 'postgres' && !layoutOf(db).stripedVocabulary
      ? postgres.applyVocabularyUnstriped
      : impl(dialect).applyVocabulary;
  const batch = batchOf(db);
  if (!batch) return apply(db, accountId, delta);
  // Keyed by the batch, not the transaction: one transaction may run several batches (migration
  // 0015), and each must sum afresh and register its own flush.
  let accounts = batchVocabulary.get(batch);
  if (!accounts) {
    accounts = new Map();
    batchVocabulary.set(batch, accounts);
  }
  let sum = accounts.get(accountId);
  if (!sum) {
    const words = new Map<string, number>();
    sum = words;
    accounts.set(accountId, words);
    await beforeCommit(db, `vocabulary ${accountId}`, (trx) => apply(trx, accountId, words));
  }
  for (const [w, d] of delta) sum.set(w, (sum.get(w) ?? 0) + d);
}

/** Indexes a new data object; call inside the transaction that inserts it. */
export async function indexDataObject(db: Db, dialect: Dialect, row: IndexedRow): Promise<void> {
  const words = await impl(dialect).insertDocument(db, row, buildIndexDocument(row));
  await applyVocabulary(db, dialect, row.account_id, vocabularyDelta([], words));
}

/** Replaces the index entry of an updated data object; call inside the transaction that updates it. */
export async function reindexDataObject(
  db: Db,
  dialect: Dialect,
  before: IndexedRow,
  after: IndexedRow,
): Promise<void> {
  // The old entry is recomputed from the old row: the same text gives the same tokens and words.
  await replaceIndexEntry(db, dialect, buildIndexDocument(before), after);
}

/**
 * Replaces the index entry `old` (exactly the document it was written from) with `row`'s, and
 * moves the vocabulary counts from the old words to the new. Migrations that change how text is
 * split pass the document an older release built.
 */
export async function replaceIndexEntry(
  db: Db,
  dialect: Dialect,
  old: IndexDocument,
  row: IndexedRow,
  next: IndexDocument = buildIndexDocument(row),
): Promise<void> {
  const { removeDocument, insertDocument, wordsOf } = impl(dialect);
  const was = (await removeDocument(db, old)) ? wordsOf(old) : [];
  const now = await insertDocument(db, row, next);
  await applyVocabulary(db, dialect, row.account_id, vocabularyDelta(was, now));
}

/** Removes a data object from the index; call inside the deleting transaction, before the row goes. */
export async function unindexDataObject(
  db: Db,
  dialect: Dialect,
  accountId: string,
  id: string,
): Promise<void> {
  // Locked on PostgreSQL, as a PATCH locks it before touching the index: a delete racing a PATCH
  // of the same object then waits for it (instead of a deadlock answered 500), and un-counts the
  // words the PATCH left rather than the ones it replaced.
  const row = await db
    .selectFrom('data_objects')
    .select(['account_id', 'id', 'title', 'type', 'content', 'tags', 'metadata'])
    .where('account_id', '=', accountId)
    .where('id', '=', id)
    .$if(dialect === 'postgres', (q) => q.forUpdate())
    .executeTakeFirst();
  if (!row) return;
  const { removeDocument, wordsOf } = impl(dialect);
  const old = buildIndexDocument(row);
  if (await removeDocument(db, old)) {
    await applyVocabulary(db, dialect, accountId, vocabularyDelta(wordsOf(old), []));
  }
}

/** What each `*` pattern expanded to, and whether any matched more words than were kept. */
export interface Expansions {
  /** Pattern -> the account's words it matches, most frequent first, at most MAX_EXPANSIONS. */
  words: Map<string, string[]>;
  /** True when a pattern matched more than MAX_EXPANSIONS words: matches through the rest are missed. */
  truncated: boolean;
}

/** The account's words matching each `*` pattern (most frequent first, at most MAX_EXPANSIONS). */
export async function expandWildcards(
  db: Db,
  dialect: Dialect,
  accountId: string,
  patterns: readonly string[],
): Promise<Expansions> {
  const words = new Map<string, string[]>();
  let truncated = false;
  for (const pattern of patterns) {
    // One more than is kept tells whether there were more.
    const found = await impl(dialect).expandPattern(db, accountId, pattern, MAX_EXPANSIONS + 1);
    // SQL LIKE and the glob agree on letters and digits; checking again costs nothing.
    const kept = found.filter((w) => matchesWildcard(pattern, w));
    if (found.length > MAX_EXPANSIONS) truncated = true;
    words.set(pattern, kept.slice(0, MAX_EXPANSIONS));
  }
  return { words, truncated };
}

/** One page of ranked hits, each with its object's fields, and the total count. */
export function searchIndex(db: Db, dialect: Dialect, q: SearchQuery): Promise<SearchPage> {
  return impl(dialect).search(db, q);
}

/**
 * Runs a search's statements on one snapshot where that takes a transaction: on SQLite the page,
 * the rows and the count are separate statements (and a transaction there costs nothing). On
 * PostgreSQL the page, its rows and the total come from one statement; only wildcard expansion
 * runs before it, and a word it misses or keeps for a concurrent write can only change whether
 * that concurrent write is found, never what the results, total and excerpts say.
 */
export function searchSnapshot<T>(db: Db, dialect: Dialect, run: (db: Db) => Promise<T>): Promise<T> {
  if (dialect === 'postgres') return run(db);
  // Read only: begun deferred (src/db/sqlite.ts), so it never waits for another process's write.
  return db.transaction().setAccessMode('read only').execute(run);
}
