import { type Kysely, sql } from 'kysely';
import { accountTag, FTS_COLUMNS, ftsRow, seqOfDoc } from '../../search/compile-sqlite.ts';
import { buildIndexDocument } from '../../search/document.ts';
import type { MigrationProgress } from '../database.ts';
import type { DataObjectsTable, Dialect } from '../types.ts';
import { ACCOUNT_TAGS, inTransaction, PROGRESS } from './0015-symbol-words.ts';
import { fitsBefore0026, foldBefore0026 } from './0026-word-folding.ts';

/**
 * SQLite only: every token of the search index starts with its account's tag (compile-sqlite.ts
 * `accountTag`), and every query's tokens with the caller's. FTS5's bm25 counts each query
 * phrase's rows over the whole table; with untagged tokens that count took in every account's
 * rows, so a tenant could learn from its own scores, and from their order, how common a word of its
 * choosing was in other accounts (docs/search.md "Tenancy").
 *
 * Every entry is written again: FTS5's 'delete-all' empties the (contentless) index in the first
 * batch, then each batch adds back `batch` entries, tagged, in rowid order (ascending rowids let
 * FTS5 append to its pending doclists instead of flushing them at every step back), rebuilt from
 * their objects with this release's indexer. Each batch records the last rowid it wrote in
 * PROGRESS (under ACCOUNT_TAGS) in the same transaction, so a run killed part-way resumes after
 * the last batch that committed. Searches meanwhile miss the entries not yet added back, and an
 * older release's writes would be untagged: stop every older process before running it
 * (docs/deployment.md "Migrations"). The vocabulary and `search_documents` do not change.
 */
export async function retag(
  db: Kysely<unknown>,
  opts: { batch?: number; batches?: number; onBatch?: (written: number) => void } = {},
): Promise<number> {
  const batch = opts.batch ?? 1000;
  const columns = sql.raw(FTS_COLUMNS.join(', '));
  let written = 0;
  for (let n = 0; opts.batches === undefined || n < opts.batches; n++) {
    const finished = await inTransaction(db, 'sqlite', async (trx) => {
      const { rows: progress } = await sql<{ last_id: string | null; done: number }>`
        SELECT last_id, done FROM ${sql.table(PROGRESS)} WHERE name = ${ACCOUNT_TAGS}`.execute(trx);
      if (progress[0] && Number(progress[0].done) === 1) return true;
      if (!progress[0]) {
        await sql`INSERT INTO search_fts (search_fts) VALUES ('delete-all')`.execute(trx);
        await sql`INSERT INTO ${sql.table(PROGRESS)} (name) VALUES (${ACCOUNT_TAGS})`.execute(trx);
      }
      const after = progress[0]?.last_id == null ? -1 : Number(progress[0].last_id);
      const { rows } = await sql<
        Pick<DataObjectsTable, 'account_id' | 'id' | 'title' | 'type' | 'content' | 'tags' | 'metadata'> & {
          doc: number;
        }
      >`
        SELECT s.doc, d.account_id, d.id, d.title, d.type, d.content, d.tags, d.metadata
        FROM search_documents s
        CROSS JOIN data_objects d ON d.account_id = s.account_id AND d.id = s.id
        WHERE s.doc > ${after} ORDER BY s.doc LIMIT ${batch}`.execute(trx);
      for (const row of rows) {
        // As releases before 0025 (and 0026, which rewrites what this wrote) indexed.
        const doc = buildIndexDocument(row, foldBefore0026, 'join', fitsBefore0026);
        const values = ftsRow(doc, accountTag(seqOfDoc(row.doc)));
        await sql`INSERT INTO search_fts (rowid, ${columns}) VALUES (${row.doc}, ${sql.join(values)})`.execute(
          trx,
        );
      }
      written += rows.length;
      const done = rows.length < batch;
      const last = rows.at(-1)?.doc;
      await sql`UPDATE ${sql.table(PROGRESS)}
        SET last_id = ${last === undefined ? (progress[0]?.last_id ?? null) : String(last)}, done = ${done ? 1 : 0}
        WHERE name = ${ACCOUNT_TAGS}`.execute(trx);
      return done;
    });
    opts.onBatch?.(written);
    if (finished) break;
  }
  return written;
}

export async function up(db: Kysely<unknown>, dialect: Dialect, progress?: MigrationProgress): Promise<void> {
  if (dialect !== 'sqlite') return;
  await retag(db, { onBatch: progress });
}
