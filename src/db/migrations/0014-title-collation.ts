import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../types.ts';

/**
 * PostgreSQL only: sort titles compare by code point (`COLLATE "C"`), as SQLite's BINARY does,
 * whatever the database's own collation. On a database made with a language's rules (ICU
 * `en-US`, `en_US.UTF-8`) `a_c` sorted before `a-c` and `a.b`, where SQLite, and docs/api.md
 * ("other scripts sort by code point; there is no per-language collation"), put it after.
 * Changing only the collation rewrites no rows; the title index is rebuilt.
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  if (dialect !== 'postgres') return;
  await sql`ALTER TABLE data_objects ALTER COLUMN title_sort TYPE text COLLATE "C"`.execute(db);
  await sql`
    ALTER TABLE search_documents
      ALTER COLUMN title_sort TYPE text COLLATE "C",
      ALTER COLUMN title_sort SET STORAGE MAIN`.execute(db);
}
