import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../types.ts';

/**
 * Titles sort with accents ignored (src/lib/sort-key.ts): `Äpfel` beside `apfel`, not after `zoo`.
 * Rows written before kept the title lower-cased as their sort key, which differs only for
 * titles outside ASCII: this recomputes the key of every data object and its search row where
 * it changes, walking the objects in key order, BATCH at a time.
 */
const BATCH = 2000;

/** src/lib/sort-key.ts `titleSortKey` as of this migration (a migration never changes). */
const sortKey = (title: string) =>
  title
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '')
    .toLowerCase();

interface Row {
  account_id: string;
  id: string;
  title: string;
  title_sort: string;
}

export async function up(db: Kysely<unknown>, _dialect: Dialect): Promise<void> {
  let last: Row | undefined;
  for (;;) {
    const after = last ? sql`WHERE (account_id, id) > (${last.account_id}, ${last.id})` : sql``;
    const { rows } = await sql<Row>`
      SELECT account_id, id, title, title_sort FROM data_objects ${after}
      ORDER BY account_id, id LIMIT ${BATCH}`.execute(db);
    for (const row of rows) {
      const key = sortKey(row.title);
      if (key === row.title_sort) continue;
      await sql`UPDATE data_objects SET title_sort = ${key}
        WHERE account_id = ${row.account_id} AND id = ${row.id}`.execute(db);
      await sql`UPDATE search_documents SET title_sort = ${key}
        WHERE account_id = ${row.account_id} AND id = ${row.id}`.execute(db);
    }
    if (rows.length < BATCH) return;
    last = rows[rows.length - 1];
  }
}
