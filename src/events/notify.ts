import { EventEmitter } from 'node:events';
import { PostgresAdapter, sql } from 'kysely';
import type pg from 'pg';
import type { Db } from '../db/types.ts';
import { pgDriver } from '../lib/optional-modules.ts';

/** PostgreSQL channel that carries "deliveries are due" to every worker process. */
export const DELIVERY_CHANNEL = 'ads_webhook_deliveries';

// One emitter per process: the outbox has no handle on the workers, and a wake-up meant for another
// database in the same process (tests) costs one empty claim query, nothing more.
const local = new EventEmitter();
local.setMaxListeners(0);

/** Calls `listener` whenever this process created deliveries; returns the unsubscribe function. */
export function onDeliveriesDue(listener: () => void): () => void {
  local.on('due', listener);
  return () => local.off('due', listener);
}

/** Wakes this process's workers (e.g. after a manual retry was queued outside a transaction). */
export function wakeLocalWorkers(): void {
  local.emit('due');
}

/** True when the handle (database or transaction) speaks PostgreSQL. */
export function isPostgres(db: Db): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter;
}

/**
 * Announces new deliveries from inside the transaction that created them. PostgreSQL delivers a
 * NOTIFY only when that transaction commits (and never on rollback), to every listening process,
 * this one included. SQLite has one connection per process, so a woken worker's claim query waits
 * behind the open transaction and sees its commit.
 */
export async function announceDeliveries(db: Db): Promise<void> {
  if (isPostgres(db)) await sql`select pg_notify(${DELIVERY_CHANNEL}, '')`.execute(db);
  else local.emit('due');
}

/** A LISTEN connection that survives server restarts. */
export interface DeliveryListener {
  /** Resolves once LISTEN is in place (or the first attempt failed; polling covers the gap). */
  ready: Promise<void>;
  close(): Promise<void>;
}

const MAX_BACKOFF_MS = 30_000;

/**
 * LISTENs on {@link DELIVERY_CHANNEL} on a dedicated connection and calls `onNotify` for every
 * notification, and once after each (re)connection since notifications sent meanwhile are lost.
 */
export function listenForDeliveries(
  url: string,
  onNotify: () => void,
  onError: (err: Error) => void,
): DeliveryListener {
  let closed = false;
  let client: pg.Client | null = null;
  let retryTimer: NodeJS.Timeout | undefined;
  let backoff = 500;
  let markReady: () => void = () => {};
  const ready = new Promise<void>((resolve) => {
    markReady = resolve;
  });

  const scheduleReconnect = () => {
    if (closed || retryTimer) return;
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      void connect();
    }, backoff);
    backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
  };

  const connect = async () => {
    const c = new (pgDriver().Client)({ connectionString: url });
    client = c;
    let failed = false;
    const fail = (err: Error) => {
      if (failed) return;
      failed = true;
      onError(err);
      c.end().catch(() => {});
      if (client === c) client = null;
      scheduleReconnect();
    };
    c.on('error', fail);
    c.on('end', () => fail(new Error('LISTEN connection ended')));
    c.on('notification', (msg) => {
      if (msg.channel === DELIVERY_CHANNEL) onNotify();
    });
    try {
      await c.connect();
      await c.query(`LISTEN ${DELIVERY_CHANNEL}`);
      if (closed) {
        failed = true;
        await c.end();
        return;
      }
      backoff = 500;
      onNotify();
    } catch (err) {
      fail(err instanceof Error ? err : new Error(String(err)));
    } finally {
      markReady();
    }
  };

  void connect();
  return {
    ready,
    async close() {
      closed = true;
      clearTimeout(retryTimer);
      const c = client;
      client = null;
      if (c) {
        c.removeAllListeners('end');
        c.on('error', () => {});
        await c.end().catch(() => {});
      }
    },
  };
}
