import fs from 'node:fs';
import path from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { SqliteDialect } from 'kysely';
import { SQLITE_CACHE_MB } from '../config.ts';

const STATEMENT_CACHE_SIZE = 256;

/**
 * Opens the SQLite file with the durability and privacy settings of decisions §5, and wraps it in a
 * bounded prepared-statement cache: Kysely asks for `prepare(sql)` on every query, and compiling the
 * same SQL again is the largest avoidable cost on hot paths.
 */
export function openSqlite(
  file: string,
  cacheMb = SQLITE_CACHE_MB,
): {
  dialect: SqliteDialect;
  raw: BetterSqlite3.Database;
  prepare: (sql: string) => BetterSqlite3.Statement;
} {
  if (file !== ':memory:') fs.mkdirSync(path.dirname(file), { recursive: true });
  const raw = new BetterSqlite3(file);
  raw.pragma('journal_mode = WAL');
  raw.pragma('synchronous = FULL');
  raw.pragma('secure_delete = ON');
  raw.pragma('foreign_keys = ON');
  raw.pragma('busy_timeout = 5000');
  // A page cache of tens of MB instead of SQLite's 2 MB: searches and reads over a large account
  // touch thousands of pages, each otherwise a read from the OS (docs/deployment.md).
  raw.pragma(`cache_size = -${Math.round(cacheMb * 1024)}`);
  const cache = new Map<string, BetterSqlite3.Statement>();
  const database = {
    close: () => {
      cache.clear();
      raw.close();
    },
    prepare: (sql: string) => {
      let stmt = cache.get(sql);
      if (stmt) {
        // Refresh recency: Map keeps insertion order, so the first key is the least recently used.
        cache.delete(sql);
      } else {
        stmt = raw.prepare(sql);
        if (cache.size >= STATEMENT_CACHE_SIZE) cache.delete(cache.keys().next().value as string);
      }
      cache.set(sql, stmt);
      return stmt;
    },
  };
  return { dialect: new SqliteDialect({ database }), raw, prepare: database.prepare };
}
