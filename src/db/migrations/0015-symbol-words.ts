import { type Kysely, sql } from 'kysely';
import { buildIndexDocument } from '../../search/document.ts';
import { foldText } from '../../search/text.ts';
import { asBatch } from '../group-commit.ts';
import type { DataObjectsTable, Db, Dialect } from '../types.ts';

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

type Row = Pick<
  DataObjectsTable,
  'account_id' | 'id' | 'title' | 'title_sort' | 'type' | 'content' | 'tags' | 'metadata' | 'created_at'
>;

/**
 * Rewrites the index entries that `from` and `to` split differently, in (account, id) order,
 * BATCH rows at a time. Returns how many entries it rewrote. Exported for the test, which also
 * runs it backwards to make the entries an older release wrote.
 */
export async function refold(
  db: Kysely<unknown>,
  dialect: Dialect,
  from: (s: string) => string,
  to: (s: string) => string,
): Promise<number> {
  // A text with a character outside ASCII has more bytes than characters.
  const wide = ['title', 'content', 'tags', 'metadata']
    .map((c) =>
      dialect === 'postgres'
        ? `octet_length(${c}) <> char_length(${c})`
        : `length(CAST(${c} AS BLOB)) <> length(${c})`,
    )
    .join(' OR ');
  // Loaded here: the indexer imports database.ts, which imports this file.
  const { replaceIndexEntry } = await import('../../search/search-index.ts');
  let rewritten = 0;
  let last: Row | undefined;
  for (;;) {
    const after = last ? sql`AND (account_id, id) > (${last.account_id}, ${last.id})` : sql``;
    const { rows } = await sql<Row>`
      SELECT account_id, id, title, title_sort, type, content, tags, metadata, created_at
      FROM data_objects WHERE (${sql.raw(wide)}) ${after}
      ORDER BY account_id, id LIMIT ${BATCH}`.execute(db);
    // One batch: the vocabulary changes of its rows are summed and applied once per account.
    await asBatch(db as unknown as Db, async () => {
      for (const row of rows) {
        const old = buildIndexDocument(row, from);
        const next = buildIndexDocument(row, to);
        if (JSON.stringify(old.fields) === JSON.stringify(next.fields)) continue;
        await replaceIndexEntry(db as unknown as Db, dialect, old, row, next);
        rewritten++;
      }
    });
    if (rows.length < BATCH) return rewritten;
    last = rows[rows.length - 1];
  }
}

export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  await refold(db, dialect, foldBefore0015, foldText);
}
