import fs from 'node:fs';
import path from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import {
  CompiledQuery,
  type DatabaseConnection,
  type Driver,
  SqliteDialect,
  SqliteDriver,
  type TransactionSettings,
} from 'kysely';
import { SQLITE_CACHE_MB } from '../config.ts';

const STATEMENT_CACHE_SIZE = 256;

/** A WAL file larger than this is checkpointed and truncated (see `trimWal`). */
const WAL_LIMIT_BYTES = 64 * 1024 * 1024;
/** How often each process looks at the WAL file's size. */
const WAL_CHECK_MS = 2_000;
/** How long a trim waits for other processes' readers to move on before it gives up for a while. */
const WAL_TRIM_WAIT_MS = 50;
/** A trim waits for readers only when at most this many frames are left after a PASSIVE checkpoint. */
const WAL_TRIM_LAG_FRAMES = 256;
/** After a TRUNCATE that readers held up (or a trim that threw), checks pause 2 s, 4 s, … up to this long. */
const WAL_TRIM_MAX_PAUSE_MS = 64_000;
/** How long a statement waits for another connection's lock (busy_timeout). */
const BUSY_TIMEOUT_MS = 5000;

/**
 * What a trim did: `emptied` the file; left it, without waiting, to a reader `behind` on an old
 * snapshot (or to another process's checkpoint); or waited for current readers that stayed `busy`.
 */
export type WalTrim = 'emptied' | 'behind' | 'busy';

export interface WalOptions {
  /** Trim the WAL above this size (default WAL_LIMIT_BYTES). */
  limitBytes?: number;
  /** Check its size this often (default every 2 s). */
  checkMs?: number;
}

/**
 * Opens the SQLite file with the durability and privacy settings of decisions §5, and wraps it in a
 * bounded prepared-statement cache: Kysely asks for `prepare(sql)` on every query, and compiling the
 * same SQL again is the largest avoidable cost on hot paths.
 */
export function openSqlite(
  file: string,
  cacheMb = SQLITE_CACHE_MB,
  wal: WalOptions = {},
): {
  dialect: SqliteDialect;
  raw: BetterSqlite3.Database;
  prepare: (sql: string) => BetterSqlite3.Statement;
  hold: () => void;
  release: () => void;
  /** Checkpoints and truncates the WAL if it is over its limit (undefined when under it or in a transaction). */
  trimWal: () => WalTrim | undefined;
  close: () => void;
} {
  if (file !== ':memory:') createOwnerOnly(file);
  const raw = new BetterSqlite3(file);
  raw.pragma('journal_mode = WAL');
  raw.pragma('synchronous = FULL');
  raw.pragma('secure_delete = ON');
  raw.pragma('foreign_keys = ON');
  raw.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
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
  const limit = wal.limitBytes ?? WAL_LIMIT_BYTES;
  /**
   * SQLite's own checkpoint (PASSIVE, at a commit past 1,000 pages) copies only the frames every
   * reader has moved past, and the WAL starts again from its beginning only when a write begins
   * with no reader left on it. Beside a process whose read-lock holder renews its snapshot every
   * turn under load (another `ads serve`, or this one beside a separate `ads worker`), both seldom
   * happen: the other process's snapshot trails the last commit. In tests of that pattern the WAL
   * file grew in steps to 26-62 MB within minutes and never shrank (docs/deployment.md, "The WAL
   * file"). So past the limit: a PASSIVE checkpoint, which takes no write lock and waits for no
   * one. If it left at most WAL_TRIM_LAG_FRAMES frames behind, the readers are current (as a busy
   * server's are: they renew within a turn), and a TRUNCATE checkpoint, holding the write lock,
   * waits up to WAL_TRIM_WAIT_MS (the busy handler) for them to read from the database file alone,
   * then empties the file. A reader on an old snapshot (a long `ads backup`) leaves more frames
   * behind: no TRUNCATE, nobody waits, and the next check tries again. Only a TRUNCATE that waited
   * in vain (or a trim that threw) makes the timer pause, 2 s, 4 s, … up to WAL_TRIM_MAX_PAUSE_MS,
   * so writers are not held up every 2 s by a reader that never lets go.
   */
  let pauseMs = 0;
  let pausedUntil = 0;
  const pause = (again: boolean) => {
    pauseMs = again ? Math.min(Math.max(pauseMs * 2, WAL_CHECK_MS), WAL_TRIM_MAX_PAUSE_MS) : 0;
    pausedUntil = again ? Date.now() + pauseMs : 0;
  };
  const trimWal = (): WalTrim | undefined => {
    if (holder === undefined || !raw.open || raw.inTransaction) return undefined;
    let size: number;
    try {
      size = fs.statSync(`${file}-wal`).size;
    } catch {
      return undefined;
    }
    if (size <= limit) {
      pause(false);
      return undefined;
    }
    holder.release();
    type Checkpoint = { busy: number; log: number; checkpointed: number };
    // One row, always.
    const [passive] = raw.pragma('wal_checkpoint(PASSIVE)') as [Checkpoint];
    // busy: another process is checkpointing; a long tail: a reader on an old snapshot.
    if (passive.busy !== 0 || passive.log - passive.checkpointed > WAL_TRIM_LAG_FRAMES) {
      pause(false);
      return 'behind';
    }
    raw.pragma(`busy_timeout = ${WAL_TRIM_WAIT_MS}`);
    try {
      const [truncate] = raw.pragma('wal_checkpoint(TRUNCATE)') as [Checkpoint];
      const emptied = truncate.busy === 0;
      pause(!emptied);
      return emptied ? 'emptied' : 'busy';
    } finally {
      raw.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    }
  };
  const timer =
    holder === undefined
      ? undefined
      : setInterval(() => {
          if (Date.now() < pausedUntil) return;
          try {
            trimWal();
          } catch (err) {
            // Not a lock (SQLite reports those as busy): an I/O error, a full disk. Said on stderr
            // (the statements that meet it report it too), and tried again less and less often.
            pause(true);
            process.emitWarning(`SQLite WAL trim of ${file} failed: ${(err as Error).message}`);
          }
        }, wal.checkMs ?? WAL_CHECK_MS);
  timer?.unref();
  const database = {
    close: () => {
      clearInterval(timer);
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
    dialect: new ImmediateSqliteDialect({ database }),
    raw,
    prepare: database.prepare,
    // Before a hot read (an autocommit statement): the holder's read lock in place for it.
    hold: () => holder?.hold(),
    // Before a hot write: no reader of ours in its way.
    release: () => holder?.release(),
    trimWal,
    close: database.close,
  };
}

/**
 * Kysely's SQLite driver starts every transaction with a plain (deferred) BEGIN. A transaction that
 * reads before it writes then fails at once with SQLITE_BUSY when another process (a separate
 * `ads worker`, a second `ads serve`) has written since its read: SQLite cannot wait for a lock on
 * behalf of a transaction whose snapshot is already out of date, so busy_timeout does not help.
 * Here a transaction takes the write lock as it begins (BEGIN IMMEDIATE), waiting up to
 * busy_timeout for another process's write to finish, and reads what that write left. Within one
 * process this changes nothing: its transactions already run one at a time on one connection.
 * A transaction marked read only (setAccessMode, as the snapshot reads are) still begins deferred,
 * so reads never wait for another process's writes.
 */
class ImmediateSqliteDriver extends SqliteDriver {
  override async beginTransaction(connection: DatabaseConnection, settings?: TransactionSettings) {
    const readOnly = settings?.accessMode === 'read only';
    await connection.executeQuery(CompiledQuery.raw(readOnly ? 'begin' : 'begin immediate'));
  }
}

class ImmediateSqliteDialect extends SqliteDialect {
  readonly #config: ConstructorParameters<typeof SqliteDialect>[0];
  constructor(config: ConstructorParameters<typeof SqliteDialect>[0]) {
    super(config);
    this.#config = config;
  }
  override createDriver(): Driver {
    return new ImmediateSqliteDriver(this.#config);
  }
}

/**
 * A second connection that keeps a read transaction open for the rest of the event-loop turn once
 * a hot read asks for it. Each autocommit read of the main connection still starts its own read
 * transaction, and so sees every commit made before it (by this process or any other), but finds
 * the WAL read lock it takes already held in this process: SQLite then counts it in memory instead
 * of a pair of fcntl calls on the shared-memory file (the unix VFS shares locks between the
 * connections of one process). The holder lets go when the turn ends (setImmediate) and before any
 * statement other than a hot read, so it never keeps a checkpoint from finishing or the WAL from
 * restarting for longer than one turn. Turn after turn under load, though, it keeps other
 * processes' writes from restarting the WAL: see trimWal in openSqlite.
 */
function readLockHolder(file: string) {
  const conn = new BetterSqlite3(file);
  conn.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
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

/**
 * Creates the database file (and its directory) readable by this user only, when they do not exist
 * yet: they hold every account's data, and SQLite would create the file with the umask's mode
 * (usually world-readable). SQLite gives the -wal and -shm files the database file's mode. An
 * existing file or directory keeps its mode.
 */
export function createOwnerOnly(file: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  try {
    fs.closeSync(fs.openSync(file, 'wx', 0o600));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
}
