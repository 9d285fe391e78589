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
  hold: () => void;
  release: () => void;
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
  const cached = (sql: string) => {
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
  };
  const holder = file === ':memory:' ? undefined : readLockHolder(file);
  const database = {
    close: () => {
      holder?.close();
      cache.clear();
      raw.close();
    },
    // Kysely's way in, for every query it runs (writes and transactions included): the holder
    // lets go first, so a write finds no reader of ours in the way of restarting the WAL.
    prepare: (sql: string) => {
      holder?.release();
      return cached(sql);
    },
  };
  return {
    dialect: new SqliteDialect({ database }),
    raw,
    prepare: database.prepare,
    // Before a hot read (an autocommit statement): the holder's read lock in place for it.
    hold: () => holder?.hold(),
    // Before a hot write: no reader of ours in its way.
    release: () => holder?.release(),
  };
}

/**
 * A second connection that keeps a read transaction open for the rest of the event-loop turn once
 * a hot read asks for it. Each autocommit read of the main connection still starts its own read
 * transaction, and so sees every commit made before it (by this process or any other), but finds
 * the WAL read lock it takes already held in this process: SQLite then counts it in memory instead
 * of a pair of fcntl calls on the shared-memory file (the unix VFS shares locks between the
 * connections of one process). The holder lets go when the turn ends (setImmediate) and before any
 * statement other than a hot read, so it never keeps a checkpoint from finishing or the WAL from
 * restarting for longer than one turn.
 */
function readLockHolder(file: string) {
  const conn = new BetterSqlite3(file);
  conn.pragma('busy_timeout = 5000');
  const begin = conn.prepare('begin');
  // A statement that names a table starts the read transaction (and takes the lock); this one reads no row.
  const touch = conn.prepare('select count(*) from sqlite_schema where 0');
  const commit = conn.prepare('commit');
  let held = false;
  const release = () => {
    if (!held) return;
    held = false;
    commit.run();
  };
  return {
    hold: () => {
      if (held) return;
      begin.run();
      try {
        touch.all();
      } catch (err) {
        commit.run();
        throw err;
      }
      held = true;
      setImmediate(release);
    },
    release,
    close: () => {
      release();
      conn.close();
    },
  };
}
