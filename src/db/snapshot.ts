import type { Kysely } from 'kysely';
import type { DB, Db, Dialect } from './types.ts';

/**
 * Runs several reads on one snapshot, so that what they return agrees: on PostgreSQL a read-only
 * REPEATABLE READ transaction (under the default READ COMMITTED each statement sees the latest
 * commit, so a page read before a write commits and its details read after it could disagree); on
 * SQLite a transaction, whose first read fixes the snapshot.
 */
export function readSnapshot<T>(db: Kysely<DB>, dialect: Dialect, run: (db: Db) => Promise<T>): Promise<T> {
  if (dialect === 'postgres') {
    return db.transaction().setIsolationLevel('repeatable read').setAccessMode('read only').execute(run);
  }
  // Read only: begun deferred (src/db/sqlite.ts), so it never waits for another process's write.
  return db.transaction().setAccessMode('read only').execute(run);
}
