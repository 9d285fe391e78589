// Group commit for SQLite: concurrent write transactions share one COMMIT, so one fsync (and one
// flush of FTS5's pending terms) acknowledges many writes. Durability is unchanged: every write
// resolves only after the COMMIT that holds it has returned, with WAL and synchronous=FULL.
import type { Kysely } from 'kysely';
import { releaseHeldWrites } from '../lib/held-writes.ts';
import type { DB, Db } from './types.ts';

/** Work done once per batch, just before its COMMIT (see `beforeCommit`). */
type Flush = (trx: Db) => Promise<void>;

interface Job {
  fn: (trx: Db) => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

/** At most this many writes share one transaction: bounds the time a batch holds the connection. */
export const MAX_BATCH = 64;

/** Per open batch transaction: work the batch's writes deferred to its end, in order. */
const batchFlushes = new WeakMap<Db, Map<string, Flush>>();

/**
 * Defers `flush` to the end of the enclosing group-commit batch (once per `key` and batch: a later
 * registration under the same key replaces the earlier one, so it must cover all of them). Outside
 * a batch it runs at once. Used to merge per-write index maintenance across a batch. Flushes run in
 * the order their keys were first registered, those registered with `last` after all the others.
 */
export async function beforeCommit(
  trx: Db,
  key: string,
  flush: Flush,
  opts: { last?: boolean } = {},
): Promise<void> {
  const flushes = batchFlushes.get(trx);
  if (flushes) flushes.set(opts.last ? `${LAST}${key}` : key, flush);
  else await flush(trx);
}

/** Marks the keys of flushes that run after the others. */
const LAST = '\u0000last:';

/** True when `trx` is a group-commit batch, so per-write work may be accumulated for `beforeCommit`. */
export const inBatch = (trx: Db): boolean => batchFlushes.has(trx);

/** The open batch on `trx` (an opaque value, new for every batch), or undefined outside one. */
export const batchOf = (trx: Db): object | undefined => batchFlushes.get(trx);

/**
 * Runs `fn` as one batch on the open transaction `trx`: work deferred with `beforeCommit` runs once,
 * after `fn`. Group commit runs each batch through this; bulk loads that write many objects in one
 * transaction use it directly (bench seeding).
 */
export async function asBatch<T>(trx: Db, fn: () => Promise<T>): Promise<T> {
  const flushes = new Map<string, Flush>();
  batchFlushes.set(trx, flushes);
  try {
    const out = await fn();
    for (const [key, flush] of flushes) if (!key.startsWith(LAST)) await flush(trx);
    for (const [key, flush] of flushes) if (key.startsWith(LAST)) await flush(trx);
    return out;
  } finally {
    batchFlushes.delete(trx);
  }
}

/**
 * Returns `write(fn)`: runs `fn` in a transaction shared with the other writes queued in the same
 * event-loop turn. `fn` must only use the database: it runs while the batch holds the connection.
 * If any write of a batch throws (or the COMMIT fails), the batch is rolled back as a whole and each
 * of its writes runs again in a transaction of its own, so every caller gets exactly its own
 * outcome; `fn` may therefore run twice and must not have effects outside `trx`.
 */
export function groupCommit(db: Kysely<DB>): <T>(fn: (trx: Db) => Promise<T>) => Promise<T> {
  let queue: Job[] = [];
  let scheduled = false;
  let draining = false;

  const runAlone = async (job: Job) => {
    // After a failed batch its writes run one by one, each with its own fsync.
    releaseHeldWrites();
    try {
      job.resolve(await db.transaction().execute(job.fn));
    } catch (err) {
      job.reject(err);
    }
  };

  const runBatch = async (jobs: Job[]) => {
    if (jobs.length === 1) return runAlone(jobs[0]!);
    let results: unknown[];
    try {
      results = await db.transaction().execute((trx) =>
        asBatch(trx, async () => {
          const out: unknown[] = [];
          for (const job of jobs) out.push(await job.fn(trx));
          return out;
        }),
      );
    } catch {
      for (const job of jobs) await runAlone(job);
      return;
    }
    for (const [i, job] of jobs.entries()) job.resolve(results[i]);
  };

  const drain = async () => {
    scheduled = false;
    draining = true;
    try {
      while (queue.length > 0) {
        const jobs = queue.slice(0, MAX_BATCH);
        queue = queue.slice(jobs.length);
        // A COMMIT's fsync takes a while: answers already finished (this turn's reads, the last
        // batch's writes) go out first.
        releaseHeldWrites();
        await runBatch(jobs);
      }
    } finally {
      draining = false;
      // This runs in the check phase, after the turn's own release: the last batch's answers,
      // written as its callers' promise chains run out, go now rather than a turn later (a tick
      // runs once the microtasks are done).
      process.nextTick(releaseHeldWrites);
    }
  };

  return <T>(fn: (trx: Db) => Promise<T>) =>
    new Promise<T>((resolve, reject) => {
      queue.push({ fn, resolve: resolve as (value: unknown) => void, reject });
      if (!scheduled && !draining) {
        scheduled = true;
        // After the I/O phase: every request read in this turn has queued its write by then.
        setImmediate(drain);
      }
    });
}
