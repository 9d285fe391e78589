import { type Kysely, sql } from 'kysely';
import type { MigrationProgress } from '../database.ts';
import type { Dialect } from '../types.ts';
import { inTransaction } from './0015-symbol-words.ts';

/**
 * Titles sort with letters with a stroke and ligatures as their base letters, and Greek final
 * sigma as `σ` (src/lib/sort-key.ts), as search folds them: `Łódź` beside `lodz`, `Straße` as
 * `strasse`, `Æsir` as `aesir`, no longer after `Zoo`. Rows written before keep 0012's key, which
 * differs from this one only for a title holding one of CANDIDATES: this recomputes the key of
 * those objects, and of their search rows, where it changes.
 *
 * It walks the objects in key order, WINDOW at a time, and only the titles of each window that
 * hold a candidate leave the database, so each batch takes a bounded time and reports its progress (as 0026), whether
 * few titles or many hold those letters: 3.7 s on SQLite and 8.8 s on PostgreSQL for 1,000,000
 * objects of 0.8 KB, 10,000 of them re-keyed (this project's 2-core machine). The keys of a window
 * that change are written in one transaction on SQLite (on PostgreSQL the whole migration is one,
 * and the objects it rewrote stay locked until it commits), each only if its title is still the
 * one read. Run again, it finds every key right and writes nothing. Additive: the schema does not
 * change, and a process of the previous release still running writes the old key, which only
 * sorts as before.
 */
const WINDOW = 2000;

/** src/lib/sort-key.ts `titleSortKey` as of this migration (a migration never changes). */
export function sortKeyAfter0027(title: string): string {
  if (/^[\0-\x7F]*$/.test(title)) return title.toLowerCase();
  return title
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '')
    .toLowerCase()
    .replace(/ς/g, 'σ')
    .replace(/[ßæœøłđðþħıŧ]/g, (c) => STROKED_0027[c]!);
}

const STROKED_0027: Record<string, string> = {
  ß: 'ss',
  æ: 'ae',
  œ: 'oe',
  ø: 'o',
  ł: 'l',
  đ: 'd',
  ð: 'd',
  þ: 'th',
  ħ: 'h',
  ı: 'i',
  ŧ: 't',
};

/**
 * Every character a title needs for its key to change: those whose 0012 key (NFKD, marks removed,
 * lower-cased) holds a STROKED_0027 letter or `ς` (the letters themselves and their capitals, `Ǣ`,
 * `Ǿ` and the like, `ℏ`, modifier letters, mathematical forms) and `Σ`, which lower-cases to `ς` at
 * the end of a word. test/data/title-sort.test.ts checks it against every code point.
 */
export const CANDIDATES = 'ÆÐØÞßæðøþĐđĦħıŁłŒœŦŧǢǣǼǽǾǿΣςϲϹᴭᶞẞℏꟸꟹ𐞃𐞕𐞢𝚤𝚺𝛓𝛴𝜍𝜮𝝇𝝨𝞁𝞢𝞻';

interface Key {
  account_id: string;
  id: string;
}

/**
 * Recomputes the key of every object whose title holds a candidate, `window` objects at a time,
 * and returns how many it changed. Exported for the test, which passes a small window.
 */
export async function rekeyTitles(
  db: Kysely<unknown>,
  dialect: Dialect,
  opts: { window?: number; onBatch?: MigrationProgress } = {},
): Promise<number> {
  const window = opts.window ?? WINDOW;
  // A title outside ASCII (more bytes than characters: nearly free) holding a candidate. The class
  // test costs about 5 µs a title on SQLite, so it runs only on those. SQLite's GLOB and
  // PostgreSQL's regular expressions compare code points in a `[...]` class.
  const candidate =
    dialect === 'postgres'
      ? sql`octet_length(title) <> char_length(title) AND title ~ ${`[${CANDIDATES}]`}`
      : sql`length(CAST(title AS BLOB)) <> length(title) AND title GLOB ${`*[${CANDIDATES}]*`}`;
  let last: Key | undefined;
  let changed = 0;
  for (;;) {
    const after = last ? sql`AND (account_id, id) > (${last.account_id}, ${last.id})` : sql``;
    // The window's last object, or none: the window reaches the end of the table.
    const { rows: edges } = await sql<Key>`
      SELECT account_id, id FROM data_objects WHERE 1 = 1 ${after}
      ORDER BY account_id, id LIMIT 1 OFFSET ${window - 1}`.execute(db);
    const edge = edges[0];
    // The window's candidates. Filtered after the window is cut (by key, on the primary key): a
    // range condition on (account_id, id) beside them was planned badly on both databases
    // (PostgreSQL scanned the whole table for a window, ~600 ms at 1,000,000 objects; SQLite walked
    // the account in the title index, which holds the title since 0023).
    const { rows } = await sql<Key & { title: string; title_sort: string }>`
      SELECT account_id, id, title, title_sort FROM (
        SELECT account_id, id, title, title_sort FROM data_objects WHERE 1 = 1 ${after}
        ORDER BY account_id, id LIMIT ${window}) AS w
      WHERE ${candidate}`.execute(db);
    const stale = rows.filter((row) => sortKeyAfter0027(row.title) !== row.title_sort);
    if (stale.length > 0) {
      changed += await inTransaction(db, dialect, async (trx) => {
        let n = 0;
        for (const row of stale) {
          const key = sortKeyAfter0027(row.title);
          // Only if the title is still the one read: a write since has set its own key.
          const { numAffectedRows } = await sql`UPDATE data_objects SET title_sort = ${key}
            WHERE account_id = ${row.account_id} AND id = ${row.id} AND title = ${row.title}`.execute(trx);
          if (!numAffectedRows) continue;
          await sql`UPDATE search_documents SET title_sort = ${key}
            WHERE account_id = ${row.account_id} AND id = ${row.id}`.execute(trx);
          n++;
        }
        return n;
      });
    }
    opts.onBatch?.(changed);
    if (!edge) return changed;
    last = edge;
  }
}

export async function up(db: Kysely<unknown>, dialect: Dialect, progress?: MigrationProgress): Promise<void> {
  await rekeyTitles(db, dialect, { onBatch: progress });
}
