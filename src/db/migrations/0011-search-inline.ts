import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../types.ts';

/**
 * PostgreSQL only: `search_documents`' small columns stay in the row. PostgreSQL moves a row's
 * values out of line (TOAST) once the row passes about 2 KB, taking the columns that may move
 * (`STORAGE EXTENDED`, every text and jsonb column by default) before those marked `MAIN`. Since
 * 0007 keeps the three vectors in the row, almost every row passed that size, so the id, account,
 * sort title, tags and metadata of almost every row went out of line, each a TOAST index lookup
 * and a page of its own: a title sort fetched the sort titles it compared that way, and a tag or
 * metadata filter each candidate's tags or metadata.
 * `MAIN` on them too leaves only the largest vectors to move out, and only when the row would not
 * fit in a page. Rows written before this migration keep their layout until they are rewritten
 * (`VACUUM FULL search_documents` rewrites them all: docs/deployment.md).
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  if (dialect !== 'postgres') return;
  await sql`
    ALTER TABLE search_documents
      ALTER COLUMN account_id SET STORAGE MAIN,
      ALTER COLUMN id SET STORAGE MAIN,
      ALTER COLUMN type SET STORAGE MAIN,
      ALTER COLUMN title_sort SET STORAGE MAIN,
      ALTER COLUMN tags SET STORAGE MAIN,
      ALTER COLUMN metadata SET STORAGE MAIN`.execute(db);
}
