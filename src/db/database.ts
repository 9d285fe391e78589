import type BetterSqlite3 from 'better-sqlite3';
import {
  CompiledQuery,
  Kysely,
  type Migration,
  type MigrationProvider,
  Migrator,
  type RawBuilder,
  sql,
} from 'kysely';
import type { Logger } from 'pino';
import type { DatabaseConfig } from '../config.ts';
import { type IdempotencyClaim, markClaimCommitted } from './commit-claim.ts';
import { asBatch, groupCommit } from './group-commit.ts';
import * as m0001 from './migrations/0001-initial.ts';
import * as m0002 from './migrations/0002-search.ts';
import * as m0003 from './migrations/0003-members.ts';
import * as m0004 from './migrations/0004-webhooks.ts';
import * as m0005 from './migrations/0005-idempotency.ts';
import * as m0006 from './migrations/0006-data-counts.ts';
import * as m0007 from './migrations/0007-search-speed.ts';
import * as m0008 from './migrations/0008-search-ties.ts';
import * as m0009 from './migrations/0009-search-phrases.ts';
import * as m0010 from './migrations/0010-search-tiers.ts';
import * as m0011 from './migrations/0011-search-inline.ts';
import * as m0012 from './migrations/0012-title-sort.ts';
import * as m0013 from './migrations/0013-idempotency-claims.ts';
import * as m0014 from './migrations/0014-title-collation.ts';
import * as m0015 from './migrations/0015-symbol-words.ts';
import * as m0016 from './migrations/0016-stroked-letters.ts';
import * as m0017 from './migrations/0017-phrase-spill.ts';
import * as m0018 from './migrations/0018-vocab-stripes.ts';
import * as m0019 from './migrations/0019-phrase-pairs.ts';
import * as m0020 from './migrations/0020-account-tags.ts';
import * as m0021 from './migrations/0021-auth-epoch.ts';
import * as m0022 from './migrations/0022-vocab-trigrams.ts';
import * as m0023 from './migrations/0023-list-covering.ts';
import * as m0024 from './migrations/0024-due-covering.ts';
import * as m0025 from './migrations/0025-long-word-breaks.ts';
import * as m0026 from './migrations/0026-word-folding.ts';
import * as m0027 from './migrations/0027-title-sort-letters.ts';
import * as m0028 from './migrations/0028-idempotency-committed.ts';
import * as m0029 from './migrations/0029-data-versions.ts';
import { HOT_STATEMENT, openPostgres } from './postgres.ts';
import { openSqlite } from './sqlite.ts';
import type { DB, Db, Dialect } from './types.ts';

/** An open database: the Kysely handle, which dialect it speaks, and how to close it. */
export interface Database {
  db: Kysely<DB>;
  dialect: Dialect;
  /**
   * A write transaction for the API's hot writes. On SQLite, writes queued in the same event-loop
   * turn share one COMMIT (src/db/group-commit.ts: `fn` may run twice and must only touch the
   * database); on PostgreSQL it is a plain transaction. With `claim` (the request's
   * Idempotency-Key), the claim is marked committed in the same transaction (commit-claim.ts).
   */
  write<T>(fn: (trx: Db) => Promise<T>, claim?: IdempotencyClaim): Promise<T>;
  close(): Promise<void>;
}

/** Opens the configured database (no migration). */
export function openDatabase(config: DatabaseConfig): Database {
  if (config.dialect === 'postgres') {
    const { dialect } = openPostgres(config.url);
    const db = new Kysely<DB>({ dialect });
    return {
      db,
      dialect: 'postgres',
      // One write per transaction, run as a batch of one so that work deferred with beforeCommit
      // (the search vocabulary upsert) runs last: its row locks, which every concurrent writer to
      // the account wants for the common words, are then held only until the COMMIT.
      write: (fn, claim) =>
        db.transaction().execute((trx) => asBatch(trx, () => withClaimMark(fn, claim)(trx))),
      close: () => db.destroy(),
    };
  }
  const sqlite = openSqlite(config.file, config.cacheMb);
  const db = new Kysely<DB>({ dialect: sqlite.dialect });
  directSqlite.set(db, sqlite);
  const write = groupCommit(db);
  return {
    db,
    dialect: 'sqlite',
    write: (fn, claim) => write(withClaimMark(fn, claim)),
    close: () => db.destroy(),
  };
}

/** `fn`, then the mark of the request's Idempotency-Key claim in the same transaction (commit-claim.ts). */
function withClaimMark<T>(
  fn: (trx: Db) => Promise<T>,
  claim: IdempotencyClaim | undefined,
): (trx: Db) => Promise<T> {
  if (claim === undefined) return fn;
  return async (trx) => {
    const out = await fn(trx);
    await markClaimCommitted(trx, claim);
    return out;
  };
}

/** Entries a migration that rewrites search entries has written so far (called after each batch). */
export type MigrationProgress = (entries: number) => void;

/** The same, for `migrate`'s caller: which migration, and its entries so far. */
export type MigrationReport = (migration: string, entries: number) => void;

type DialectMigration = {
  up(db: Kysely<unknown>, dialect: Dialect, progress?: MigrationProgress): Promise<void>;
};

/** Migrations in order; names are immutable once released. */
const MIGRATIONS: Record<string, DialectMigration> = {
  '0001-initial': m0001,
  '0002-search': m0002,
  '0003-members': m0003,
  '0004-webhooks': m0004,
  '0005-idempotency': m0005,
  '0006-data-counts': m0006,
  '0007-search-speed': m0007,
  '0008-search-ties': m0008,
  '0009-search-phrases': m0009,
  '0010-search-tiers': m0010,
  '0011-search-inline': m0011,
  '0012-title-sort': m0012,
  '0013-idempotency-claims': m0013,
  '0014-title-collation': m0014,
  '0015-symbol-words': m0015,
  '0016-stroked-letters': m0016,
  '0017-phrase-spill': m0017,
  '0018-vocab-stripes': m0018,
  '0019-phrase-pairs': m0019,
  '0020-account-tags': m0020,
  '0021-auth-epoch': m0021,
  '0022-vocab-trigrams': m0022,
  '0023-list-covering': m0023,
  '0024-due-covering': m0024,
  '0025-long-word-breaks': m0025,
  '0026-word-folding': m0026,
  '0027-title-sort-letters': m0027,
  '0028-idempotency-committed': m0028,
  '0029-data-versions': m0029,
};

class StaticProvider implements MigrationProvider {
  constructor(
    private readonly dialect: Dialect,
    private readonly onProgress?: MigrationReport,
  ) {}
  async getMigrations(): Promise<Record<string, Migration>> {
    const report = this.onProgress;
    return Object.fromEntries(
      Object.entries(MIGRATIONS).map(([name, m]) => [
        name,
        {
          up: (db: Kysely<unknown>) =>
            m.up(db, this.dialect, report && ((entries: number) => report(name, entries))),
        },
      ]),
    );
  }
}

/**
 * An `onProgress` for migrate that passes on at most one report every `ms` (the first after `ms`):
 * the migrations that rewrite search entries run for minutes on a large database (0020: about 8
 * minutes per million objects on SQLite) and report after every batch.
 */
export function progressEvery(report: MigrationReport, ms = 5000): MigrationReport {
  let last = Date.now();
  return (migration, entries) => {
    const now = Date.now();
    if (now - last < ms) return;
    last = now;
    report(migration, entries);
  };
}

/**
 * Brings the schema up to date (or up to the migration named `to`, for upgrade tests); safe to run
 * from several processes at once (Kysely's migration lock). `onProgress` hears from the migrations
 * that rewrite search entries, after each batch.
 */
export async function migrate(
  database: Database,
  opts: { to?: string; onProgress?: MigrationReport; onNewerSchema?: (newer: string[]) => void } = {},
): Promise<string[]> {
  if (!opts.to) {
    const newer = await newerSchema(database);
    if (newer.length > 0) {
      opts.onNewerSchema?.(newer);
      return [];
    }
  }
  const migrator = new Migrator({
    db: database.db,
    provider: new StaticProvider(database.dialect, opts.onProgress),
    // 0027 was added after 0028 had been committed on main, so a database migrated at those
    // commits (90d1584, 07e2f67) has 0028 without 0027, and Kysely's ordering check refused it as
    // "corrupted migrations". Every migration since 0020 is idempotent and independent of the
    // ones next to it, so a missing earlier one is run after the later ones.
    allowUnorderedMigrations: true,
  });
  const { error, results } = opts.to ? await migrator.migrateTo(opts.to) : await migrator.migrateToLatest();
  if (error) {
    // A newer release migrated while this process waited for the migration lock (PostgreSQL): it
    // found nothing newer before the lock, and Kysely, reading again under it, refuses the unknown
    // names. Checked again now, it is the newer schema it is (or the refusal naming a break).
    if (!opts.to && /previously executed migration .* is missing/.test(String((error as Error).message))) {
      const newer = await newerSchema(database);
      if (newer.length > 0) {
        opts.onNewerSchema?.(newer);
        return [];
      }
    }
    throw error;
  }
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

/**
 * A migration a process of an earlier release cannot run beside (it changes what that release
 * reads or writes: docs/deployment.md "Migrations" names them) records its name here, so such a
 * process refuses to start rather than run against a schema it would misuse. Migrations up to 0024
 * predate the table and record nothing.
 */
const SCHEMA_BREAKS_TABLE = 'schema_breaks';

/** For a migration that is not additive: records it in SCHEMA_BREAKS_TABLE (see there). */
export async function recordSchemaBreak(db: Kysely<unknown> | Database['db'], name: string): Promise<void> {
  await sql`CREATE TABLE IF NOT EXISTS ${sql.table(SCHEMA_BREAKS_TABLE)} (name TEXT PRIMARY KEY)`.execute(db);
  await sql`INSERT INTO ${sql.table(SCHEMA_BREAKS_TABLE)} (name) VALUES (${name}) ON CONFLICT DO NOTHING`.execute(
    db,
  );
}

/**
 * Migrations the database has that this release does not know, when they all come after its own
 * (a newer release migrated it: this one was rolled back to, or still runs in a rolling deploy).
 * Kysely refuses to run beside them ("previously executed migration … is missing"), so an earlier
 * release could not even restart; the schema of additive migrations serves it as it is, so this
 * one starts without migrating. Throws, naming them, when one of them recorded that it breaks
 * earlier releases (recordSchemaBreak). Empty when there is nothing newer, or when the unknown
 * migrations are not all later (Kysely's own error then says what is wrong).
 */
async function newerSchema(database: Database): Promise<string[]> {
  const known = Object.keys(MIGRATIONS).sort();
  const executed = await namesIn(database.db, sql`SELECT name FROM kysely_migration`);
  const breaks = await namesIn(database.db, sql`SELECT name FROM ${sql.table(SCHEMA_BREAKS_TABLE)}`);
  // A break recorded by a newer release's migration that is still running, or was interrupted
  // (on SQLite its batches commit as they go, and it records the break before the first).
  const underWay = breaks.filter((name) => !(name in MIGRATIONS) && !executed.includes(name)).sort();
  if (underWay.length > 0) {
    throw new Error(
      `a newer release's migration ${underWay.join(', ')} is under way or was interrupted, and this release cannot run beside it: finish it with the newer release's ads migrate, or restore a backup taken before it`,
    );
  }
  const unknown = executed.filter((name) => !(name in MIGRATIONS)).sort();
  if (unknown.length === 0 || unknown[0]! <= known[known.length - 1]!) return [];
  if (!known.every((name) => executed.includes(name))) return [];
  const breaking = unknown.filter((name) => breaks.includes(name));
  if (breaking.length > 0) {
    throw new Error(
      `the database was migrated by a newer release (${unknown.join(', ')}), and ${breaking.join(', ')} cannot run beside this one: run the newer release, or restore a backup taken before it`,
    );
  }
  return unknown;
}

/** The `name` column of a query's rows; none when its table does not exist (yet). */
async function namesIn(db: Database['db'], query: RawBuilder<{ name: string }>): Promise<string[]> {
  try {
    return (await query.execute(db)).rows.map((r) => r.name);
  } catch {
    return [];
  }
}

/** migrate for `ads serve` and `ads worker`: progress every 5 s and the applied names, logged. */
export async function migrateLogged(database: Database, logger: Logger): Promise<string[]> {
  const applied = await migrate(database, {
    onProgress: progressEvery((migration, entries) =>
      logger.info({ migration, entries }, 'migration rewriting search entries'),
    ),
    onNewerSchema: (newer) =>
      logger.warn(
        { migrations: newer },
        'the database has migrations of a newer release; starting without migrating',
      ),
  });
  if (applied.length) logger.info({ migrations: applied }, 'migrations applied');
  return applied;
}

/**
 * True when the database answers a trivial query within `timeoutMs` (readiness). Bounded, so a
 * database that stops answering without refusing (a network partition) makes the probe say 503
 * rather than hang past the balancer's probe timeout.
 */
export async function ping(database: Database, timeoutMs = 2000): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), timeoutMs);
  });
  const answered = sql`select 1`.execute(database.db).then(
    () => true,
    () => false,
  );
  try {
    return await Promise.race([answered, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** True when the error is a unique-constraint violation on either dialect. */
export function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: string };
  return (
    e?.code === '23505' ||
    e?.code === 'SQLITE_CONSTRAINT_UNIQUE' ||
    e?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY'
  );
}

type DirectSqlite = Pick<ReturnType<typeof openSqlite>, 'raw' | 'hold' | 'release'>;

/** The SQLite connection behind each SQLite Kysely handle (not its transactions), for hotQuery. */
const directSqlite = new WeakMap<object, DirectSqlite>();

/** What a hot query answers: every row, the first row, or the first row's one column. */
type Shape = 'rows' | 'first' | 'value';

type HotQuery<Out> = (db: Db, dialect: Dialect, params: readonly unknown[]) => Promise<Out>;

/**
 * A hot-path query written once in SQL with `?` placeholders (PostgreSQL gets `$1…`): Kysely's
 * builder and compiler cost more than SQLite's own work on a point read. Both dialects reuse the
 * prepared statement (src/db/postgres.ts; on SQLite the query keeps its own).
 *
 * On SQLite, called with the database's own handle while no transaction is open on its one
 * connection, it runs the statement directly (a few µs less than Kysely's executor and connection
 * mutex, per statement), a read with the turn's WAL read lock held beside it (readLockHolder in
 * src/db/sqlite.ts). While a transaction is open (a group commit between its awaits), it goes
 * through Kysely like any built query and waits for the mutex: run directly, it would read that
 * transaction's uncommitted writes. Called with a transaction, it always runs in it.
 *
 * A query of one row (`hotFirst`) or one value (`hotValue`) asks SQLite for that row only, and a
 * value without building a row object: on a point read these, and binding the parameters as
 * arguments rather than an array, took ~0.5 µs off each statement (docs/benchmarks.md).
 */
function hot<Out>(text: string, shape: Shape): HotQuery<Out> {
  let n = 0;
  const pgText = HOT_STATEMENT + text.replace(/\?/g, () => `$${++n}`);
  // The statement, prepared on the connection it was last run on. A process has one SQLite
  // database; tests open many, and the first call on another one prepares it there.
  let owner: DirectSqlite | undefined;
  let stmt: BetterSqlite3.Statement | undefined;
  const none = (shape === 'rows' ? [] : undefined) as Out;
  const shaped = (rows: Record<string, unknown>[]) =>
    (shape === 'rows'
      ? rows
      : shape === 'first' || rows[0] === undefined
        ? rows[0]
        : Object.values(rows[0])[0]) as Out;
  return (db, dialect, params) => {
    const direct = directSqlite.get(db);
    if (direct !== undefined && !direct.raw.inTransaction) {
      try {
        if (owner !== direct) {
          stmt = direct.raw.prepare(text);
          if (shape === 'value' && stmt.reader) stmt.pluck();
          owner = direct;
        }
        const s = stmt!;
        if (!s.reader) {
          direct.release();
          s.run(...params);
          return Promise.resolve(none);
        }
        direct.hold();
        return Promise.resolve((shape === 'rows' ? s.all(...params) : s.get(...params)) as Out);
      } catch (err) {
        return Promise.reject(err);
      }
    }
    return db
      .executeQuery<Record<string, unknown>>(
        CompiledQuery.raw(dialect === 'postgres' ? pgText : text, params as unknown[]),
      )
      .then((r) => shaped(r.rows));
  };
}

/** A hot query's rows (see `hot`). */
export const hotQuery = <R>(text: string): HotQuery<R[]> => hot<R[]>(text, 'rows');
/** A hot query's first row, or undefined (see `hot`). */
export const hotFirst = <R>(text: string): HotQuery<R | undefined> => hot<R | undefined>(text, 'first');
/** A hot query's one column of its first row, or undefined (see `hot`). */
export const hotValue = <V>(text: string): HotQuery<V | undefined> => hot<V | undefined>(text, 'value');
