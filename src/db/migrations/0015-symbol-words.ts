import { type Kysely, type RawBuilder, sql } from 'kysely';
import { buildIndexDocument, type IndexDocument } from '../../search/document.ts';
import { CURRENT as CURRENT_LAYOUT, withIndexLayout } from '../../search/layout.ts';
import type { MigrationProgress } from '../database.ts';
import { asBatch } from '../group-commit.ts';
import type { DataObjectsTable, Db, Dialect } from '../types.ts';
import { fitsBefore0026 } from './0026-word-folding.ts';

/**
 * A symbol whose compatibility form holds letters (™ -> TM, ℃ -> °C, ㎒ -> MHz) no longer glues
 * its letters onto the word before it: `Windows™` is indexed as `windows`, no longer `windowstm`,
 * so `q=windows` finds it (src/search/text.ts). Objects indexed before keep the old words until
 * rewritten, and updating or deleting one needs the entry exactly as it was written (FTS5's
 * 'delete' takes the original tokens; the vocabulary counts its words). So this rewrites the index
 * entry of every object whose words change: removed as the old folding built it, added as the new
 * one does. Only text with a character outside ASCII can change, and SQL finds those rows.
 *
 * It runs the live indexer: the search tables are as 0014 left them, which is what the indexer
 * of this release writes. A later migration that changes those tables must come after this one
 * and convert what it finds (as every migration does).
 */
const BATCH = 500;

/** src/search/text.ts `foldText` before this migration (a migration never changes). */
export function foldBefore0015(s: string): string {
  return s
    .replace(/\p{Cs}/gu, ' ')
    .normalize('NFKD')
    .toLowerCase()
    .normalize('NFKD')
    .replace(/\p{M}/gu, '');
}

/**
 * src/search/text.ts `foldText` as this migration wrote the entries: the symbol rule, without the
 * stroked letters of 0016 (which rewrites what this wrote, so this must not write with a later fold).
 */
export function foldAfter0015(s: string): string {
  return s
    .replace(/\p{Cs}/gu, ' ')
    .replace(/[^\p{L}\p{N}\p{M}\0-\x7F]/gu, (c) => (c.normalize('NFKD') === c ? c : ' '))
    .normalize('NFKD')
    .toLowerCase()
    .normalize('NFKD')
    .replace(/\p{M}/gu, '');
}

type Row = Pick<
  DataObjectsTable,
  'account_id' | 'id' | 'title' | 'title_sort' | 'type' | 'content' | 'tags' | 'metadata' | 'created_at'
>;

/** Where rewrites record their progress; created by this migration, so it exists on every database. */
export const PROGRESS = 'search_refold_progress';

/** Migration 0020's record in PROGRESS: SQLite's index tokens carry account tags once it is done. */
export const ACCOUNT_TAGS = '0020-account-tags';

/**
 * `fn` in a transaction of its own. On PostgreSQL the migration already runs in one (with the
 * migration's record, under its advisory lock). On SQLite Kysely runs migrations outside any
 * transaction, so each call is one BEGIN IMMEDIATE: its writes commit together with the progress
 * they record, and a second process migrating at the same time waits for it.
 */
export async function inTransaction<T>(
  db: Kysely<unknown>,
  dialect: Dialect,
  fn: (trx: Kysely<unknown>) => Promise<T>,
): Promise<T> {
  if (db.isTransaction) return fn(db);
  return db.connection().execute(async (conn) => {
    await (dialect === 'sqlite' ? sql`BEGIN IMMEDIATE` : sql`BEGIN`).execute(conn);
    try {
      const out = await fn(conn);
      await sql`COMMIT`.execute(conn);
      return out;
    } catch (err) {
      await sql`ROLLBACK`.execute(conn);
      throw err;
    }
  });
}

/**
 * Rewrites the index entries that `from` and `to` split differently, in (account, id) order,
 * `batch` rows at a time, and returns how many it rewrote. Each batch records where it got to under
 * `name`, in its own transaction: run again after a crash, it resumes after the last batch that
 * committed, and once it has finished it does nothing. An entry is never rewritten twice, which
 * would remove tokens it no longer holds (FTS5 then reports a corrupt index) and count its words
 * twice. Exported for the test, which also runs it backwards (under another name) to make the
 * entries an older release wrote, and stops it after `batches` to stand for a crash.
 */
export async function refold(
  db: Kysely<unknown>,
  dialect: Dialect,
  name: string,
  from: (s: string) => string,
  to: (s: string) => string,
  opts: RewriteOptions = {},
): Promise<number> {
  // A text with a character outside ASCII has more bytes than characters.
  const wide = ['title', 'content', 'tags', 'metadata']
    .map((c) =>
      dialect === 'postgres'
        ? `octet_length(${c}) <> char_length(${c})`
        : `length(CAST(${c} AS BLOB)) <> length(${c})`,
    )
    .join(' OR ');
  return rewriteEntries(
    db,
    dialect,
    name,
    sql.raw(wide),
    (row) => {
      // Entries as releases before 0025 wrote them: overlong words joined their neighbours; and
      // before 0026: words of up to 128 UTF-16 units.
      const old = buildIndexDocument(row, from, 'join', fitsBefore0026);
      const next = buildIndexDocument(row, to, 'join', fitsBefore0026);
      return JSON.stringify(old.fields) === JSON.stringify(next.fields) ? null : { old, next };
    },
    opts,
  );
}

export interface RewriteOptions {
  batch?: number;
  batches?: number;
  /**
   * Look at most this many objects (in key order) per batch, whether or not `where` selects them:
   * a `where` that needs a full read of each row (a character test) and selects few then costs a
   * bounded time per batch, so progress is reported as the scan goes rather than once at its end.
   */
  scanRows?: number;
  /** Called after each batch commits, with the number of entries rewritten so far. */
  onBatch?: (rewritten: number) => void;
}

/**
 * Rewrites the index entry of every object that `where` (SQL over `data_objects`) selects and
 * `rewrite` returns the old and new documents of, resumably and at most once each, as `refold`
 * describes. Used by later migrations that rewrite entries.
 */
export async function rewriteEntries(
  db: Kysely<unknown>,
  dialect: Dialect,
  name: string,
  where: RawBuilder<unknown>,
  rewrite: (row: Row) => { old: IndexDocument; next: IndexDocument } | null,
  opts: RewriteOptions = {},
): Promise<number> {
  const batch = opts.batch ?? BATCH;
  // Loaded here: the indexer imports database.ts, which imports this file.
  const { replaceIndexEntry } = await import('../../search/search-index.ts');
  await sql`CREATE TABLE IF NOT EXISTS ${sql.table(PROGRESS)} (
    name text PRIMARY KEY, last_account text, last_id text, done integer NOT NULL DEFAULT 0)`.execute(db);
  await sql`INSERT INTO ${sql.table(PROGRESS)} (name) VALUES (${name}) ON CONFLICT (name) DO NOTHING`.execute(
    db,
  );
  // The current layout, less what this database's migrations have not reached yet.
  const layout = { ...CURRENT_LAYOUT };
  if (dialect === 'sqlite') {
    // Before migration 0020 has finished, FTS5 tokens carry no account tag.
    const { rows: tagged } = await sql<{ done: number }>`
      SELECT done FROM ${sql.table(PROGRESS)} WHERE name = ${ACCOUNT_TAGS}`.execute(db);
    layout.accountTags = Number(tagged[0]?.done ?? 0) === 1;
  }
  if (dialect === 'postgres') {
    const { rows: columns } = await sql<{ attname: string }>`
      SELECT attname FROM pg_attribute
      WHERE attrelid IN ('search_vocab'::regclass, 'search_documents'::regclass)
        AND attname IN ('stripe', 'pairs') AND NOT attisdropped`.execute(db);
    const has = new Set(columns.map((c) => c.attname));
    layout.stripedVocabulary = has.has('stripe');
    layout.pairSketch = has.has('pairs');
  }
  let rewritten = 0;
  for (let n = 0; opts.batches === undefined || n < opts.batches; n++) {
    const finished = await inTransaction(db, dialect, async (trx) => {
      const { rows: progress } = await sql<{
        last_account: string | null;
        last_id: string | null;
        done: number;
      }>`
        SELECT last_account, last_id, done FROM ${sql.table(PROGRESS)} WHERE name = ${name}`.execute(trx);
      const at = progress[0];
      if (!at || Number(at.done) === 1) return true;
      const after =
        at.last_account === null ? sql`` : sql`AND (account_id, id) > (${at.last_account}, ${at.last_id})`;
      // The last object of this batch's window (scanRows), or none: the window reaches the end.
      const edge = opts.scanRows
        ? (
            await sql<{ account_id: string; id: string }>`
              SELECT account_id, id FROM data_objects WHERE 1 = 1 ${after}
              ORDER BY account_id, id LIMIT 1 OFFSET ${opts.scanRows - 1}`.execute(trx)
          ).rows[0]
        : undefined;
      const upTo = edge ? sql`AND (account_id, id) <= (${edge.account_id}, ${edge.id})` : sql``;
      // Locked on PostgreSQL: a PATCH or DELETE of an object in the batch waits for it, so no
      // entry is rewritten from a row that changed meanwhile (`ads reindex` runs beside the server).
      const { rows } = await sql<Row>`
        SELECT account_id, id, title, title_sort, type, content, tags, metadata, created_at
        FROM data_objects WHERE (${where}) ${after} ${upTo}
        ORDER BY account_id, id LIMIT ${batch}${dialect === 'postgres' ? sql` FOR UPDATE` : sql``}`.execute(
        trx,
      );
      // One batch: the vocabulary changes of its rows are summed and applied once per account.
      const run = () =>
        asBatch(trx as unknown as Db, async () => {
          for (const row of rows) {
            const docs = rewrite(row);
            if (docs === null) continue;
            await replaceIndexEntry(trx as unknown as Db, dialect, docs.old, row, docs.next);
            rewritten++;
          }
        });
      // As migrations, 0015-0017 run before 0018 and 0019 have changed PostgreSQL's index tables,
      // and before 0020 has tagged SQLite's tokens.
      await withIndexLayout(trx, layout, run);
      // A full batch may leave selected rows in the window: the next one starts after its last row.
      const full = rows.length === batch;
      const last = full ? rows.at(-1) : (edge ?? rows.at(-1));
      const done = !full && edge === undefined;
      await sql`UPDATE ${sql.table(PROGRESS)}
        SET last_account = ${last?.account_id ?? at.last_account}, last_id = ${last?.id ?? at.last_id},
          done = ${done ? 1 : 0}
        WHERE name = ${name}`.execute(trx);
      return done;
    });
    opts.onBatch?.(rewritten);
    if (finished) break;
  }
  return rewritten;
}

export async function up(db: Kysely<unknown>, dialect: Dialect, progress?: MigrationProgress): Promise<void> {
  await refold(db, dialect, '0015-symbol-words', foldBefore0015, foldAfter0015, { onBatch: progress });
}
