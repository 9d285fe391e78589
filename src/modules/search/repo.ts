import { sql } from 'kysely';
import type { Db } from '../../db/types.ts';
import { MAX_SCAN_CHARS } from '../../search/excerpt.ts';

/**
 * The fields a page of search results shows, for the hits' ids within one account. Content is cut
 * in the database to what the excerpt builder scans, so a huge object costs no more than a small one.
 */
export async function findResultRows(db: Db, accountId: string, ids: string[]) {
  if (ids.length === 0) return [];
  return db
    .selectFrom('data_objects')
    .select([
      'id',
      'title',
      'type',
      'created_at',
      sql<string>`substr(content, 1, ${MAX_SCAN_CHARS})`.as('content'),
    ])
    .where('account_id', '=', accountId)
    .where('id', 'in', ids)
    .execute();
}
