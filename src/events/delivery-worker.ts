import { randomBytes } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import type { Dispatcher } from 'undici';
import type { AppContext } from '../context.ts';
import { secretBoxFor } from '../lib/secrets.ts';
import type { Worker } from '../workers.ts';
import {
  type AttemptOutcome,
  type ClaimedDelivery,
  type Completion,
  claimWithTargets,
  completeDeliveries,
  dropOrphan,
  type loadTargets,
  nextDueAt,
  releaseClaims,
} from './delivery-queue.ts';
import { createDeliveryDispatcher } from './dispatcher.ts';
import { type DeliveryListener, listenForDeliveries, onDeliveriesDue } from './notify.ts';
import { nextRetry } from './retry-policy.ts';
import { type AttemptResult, sendWebhook } from './send.ts';

/** Tuning of {@link createDeliveryWorker}; the defaults suit one `ads serve` or `ads worker`. */
export interface DeliveryWorkerOptions {
  /** Most deliveries claimed by one query (default: `concurrency`). */
  batchSize?: number;
  /** Most attempts in flight at once. */
  concurrency?: number;
  /** Most attempts in flight at once to one webhook (default: `concurrency` less an eighth). */
  perWebhook?: number;
  /** Most attempts in flight at once for one account (default: `concurrency` less an eighth). */
  perAccount?: number;
  /** Fallback poll when no wake-up arrives. */
  pollMs?: number;
  /** LISTEN for PostgreSQL notifications (default true on PostgreSQL). */
  listen?: boolean;
  /** Dispatcher to send through (default: the SSRF-guarded one from the settings). */
  dispatcher?: Dispatcher;
}

/** The delivery worker: a {@link Worker} plus `ready` (LISTEN in place) and `wake()`. */
export interface DeliveryWorker extends Worker {
  ready: Promise<void>;
  wake(): void;
}

type Targets = Awaited<ReturnType<typeof loadTargets>>;

/**
 * Attempts one worker runs at once. 16 kept up with SQLite writes only at about four fifths of
 * their rate in a burst, so deliveries queued behind them; with 64 they keep pace, and a backlog
 * drains at about 3,000/s on SQLite and 2,200/s on PostgreSQL (bench/webhooks, docs/benchmarks.md).
 */
const DEFAULT_CONCURRENCY = 64;

// Longest wait for slots to free up before claiming more from a backlog.
const COALESCE_MS = 50;
// How long finished attempts wait to share a transaction, and how many may share one.
const GROUP_COMMIT_MS = 5;
const MAX_GROUP_COMMIT = 100;
// Quiet gap after an empty claim while another worker's claim may still be committing.
const MIN_IDLE_MS = 10;
// A claim pass that leaves those at their share out of its scan walks every due row of theirs, so
// its cost grows with their backlog (claimDueDeliveries). After one, a worker claims without
// leaving anyone out (`reach: false`) for REACH_MIN_MS, or for ten times as long as the pass took
// (1 / REACH_SHARE), so such passes take at most about a tenth of its time: the others' deliveries
// behind a flood wait that long at most, and a flood cannot make every claim, which on SQLite holds
// the write lock, as long as its backlog.
const REACH_MIN_MS = 100;
const REACH_SHARE = 0.1;

/**
 * Claims due webhook deliveries and sends them: bounded batch and concurrency, a deadline per
 * attempt, retries on the settings' schedule, disabling on 410 or an exhausted schedule. Woken right
 * after commits that created deliveries (in-process, and by LISTEN/NOTIFY across processes on
 * PostgreSQL); the poll is only a fallback. stop() lets in-flight attempts finish.
 */
export function createDeliveryWorker(ctx: AppContext, opts: DeliveryWorkerOptions = {}): DeliveryWorker {
  const { config, database, clock } = ctx;
  const log = ctx.logger.child({ component: 'webhook-worker' });
  const concurrency = opts.concurrency ?? DEFAULT_CONCURRENCY;
  // One claim can fill every free slot: with a smaller batch (50 against 64 slots) a backlog took
  // two claims, each a transaction, per refill.
  const batchSize = opts.batchSize ?? concurrency;
  const pollMs = opts.pollMs ?? 1000;
  const { timeoutMs, retrySchedule } = config.webhook;
  // Longer than any attempt (deadline plus the outcome write), so a live claim never expires.
  const leaseMs = 2 * timeoutMs + 1000;
  const ownDispatcher = opts.dispatcher === undefined;
  const dispatcher = opts.dispatcher ?? createDeliveryDispatcher(config);
  const iso = (ms: number) => new Date(ms).toISOString();

  const inFlight = new Set<Promise<void>>();
  // Attempts in flight per webhook and per account: a claim leaves each its fair share of slots,
  // so one tenant's hanging receivers or flood cannot hold every slot (claimDueDeliveries).
  const hookLoad = new Map<string, number>();
  const accountLoad = new Map<string, number>();
  // An eighth of the slots (8 of 64) stays free for other accounts whatever one account has due.
  // A larger reserve costs a lone tenant's backlog its pace: with 48 of 64 a 5-webhook drain ran
  // 28 % slower (bench/webhooks, 2026-11-26); with 56, see docs/benchmarks.md.
  const reserve = Math.max(1, Math.floor(concurrency / 8));
  const share = {
    perWebhook: opts.perWebhook ?? Math.max(1, concurrency - reserve),
    perAccount: opts.perAccount ?? Math.max(1, concurrency - reserve),
    webhooks: hookLoad,
    accounts: accountLoad,
  };
  const bump = (map: Map<string, number>, id: string, by: number) => {
    const n = (map.get(id) ?? 0) + by;
    if (n > 0) map.set(id, n);
    else map.delete(id);
  };
  let stopping = false;
  let woken = false;
  let interrupt: (() => void) | null = null;
  const wake = () => {
    woken = true;
    interrupt?.();
  };
  /** Waits `ms`, or less: until wake(), stop(), or `also` settles. */
  const pause = (ms: number, also?: Promise<unknown>) =>
    new Promise<void>((resolve) => {
      if (woken || stopping) return resolve();
      let settled = false;
      const done = () => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        interrupt = null;
        resolve();
      };
      const timer = setTimeout(done, ms);
      interrupt = done;
      also?.then(done, done);
    });
  /** Whether some webhook or account has its whole share in flight (a claim then leaves it out). */
  const anyAtShare = () => {
    for (const n of hookLoad.values()) if (n >= share.perWebhook) return true;
    for (const n of accountLoad.values()) if (n >= share.perAccount) return true;
    return false;
  };

  const unsubscribe = onDeliveriesDue(wake);
  let listener: DeliveryListener | null = null;
  if (config.database.dialect === 'postgres' && opts.listen !== false) {
    listener = listenForDeliveries(config.database.url, wake, (err) =>
      log.warn({ err: err.message }, 'LISTEN connection lost; polling until it is back'),
    );
  }

  // Group commit: outcomes are written a few milliseconds after the first of them finishes, so the
  // attempts answered meanwhile share one transaction (one commit, one fsync) instead of one each;
  // a claim made meanwhile takes them into its own transaction instead.
  const queued: Array<Completion & { done: (written: boolean) => void; fail: (err: unknown) => void }> = [];
  let flushing = false;
  const flush = async () => {
    flushing = true;
    await delay(GROUP_COMMIT_MS);
    while (queued.length > 0) {
      const batch = queued.splice(0, MAX_GROUP_COMMIT);
      try {
        const written = await completeDeliveries(database.db, database.dialect, batch);
        for (const [i, item] of batch.entries()) item.done(written[i] ?? false);
      } catch (err) {
        for (const item of batch) item.fail(err);
      }
    }
    flushing = false;
  };
  const record = (claim: ClaimedDelivery, outcome: AttemptOutcome, now: string) =>
    new Promise<boolean>((done, fail) => {
      queued.push({ claim, outcome, now, done, fail });
      if (!flushing) void flush();
    });

  const decide = (c: ClaimedDelivery, r: AttemptResult, nowMs: number, url: string): AttemptOutcome => {
    const attempt = {
      at: iso(nowMs - r.durationMs),
      status_code: r.statusCode,
      duration_ms: r.durationMs,
      error: r.error,
    };
    const done = { nextAttemptAt: null, retriesUsed: c.retries_used, attempt };
    if (r.ok) return { ...done, status: 'succeeded' };
    if (r.statusCode === 410) {
      return { ...done, status: 'failed', disable: 'receiver answered 410 Gone', url };
    }
    // A manual retry is one extra attempt; the schedule and the webhook's status stay as they were.
    if (c.manual) return { ...done, status: 'failed' };
    const step = nextRetry(retrySchedule, c.retries_used, r.retryAfterMs);
    if (!step) {
      const attempts = c.attempt_count + 1;
      return {
        ...done,
        status: 'failed',
        disable: `delivery ${c.id} failed after ${attempts} attempts`,
        url,
      };
    }
    return {
      status: 'pending',
      nextAttemptAt: iso(nowMs + step.delayMs),
      retriesUsed: step.retriesUsed,
      attempt,
    };
  };

  const deliver = async (c: ClaimedDelivery, targets: Targets): Promise<void> => {
    const hook = targets.hooks.get(`${c.account_id}/${c.webhook_id}`);
    const payload: string | undefined = targets.payloads.get(`${c.account_id}/${c.event_id}`);
    if (!hook) return dropOrphan(database.db, c);
    const now = () => iso(clock());
    if (hook.status !== 'active' || payload === undefined) {
      // Disabled after this delivery was queued (or its event is gone): nothing is sent.
      const outcome: AttemptOutcome = {
        status: 'failed',
        nextAttemptAt: null,
        retriesUsed: c.retries_used,
        attempt: null,
      };
      await record(c, outcome, now());
      return;
    }
    let secret: string | null = null;
    let result: AttemptResult;
    try {
      if (hook.sealed_secret !== null) secret = secretBoxFor(config).open(hook.sealed_secret);
      result = await sendWebhook(
        dispatcher,
        {
          url: hook.url,
          rawBody: payload,
          eventName: c.event_name,
          deliveryId: c.id,
          messageId: c.event_id,
          secret,
        },
        { timeoutMs, now: clock },
      );
    } catch (err) {
      // Never send unsigned when a secret exists but cannot be opened (wrong key): record why instead.
      result = {
        ok: false,
        statusCode: null,
        durationMs: 0,
        error: `cannot sign: ${(err as Error).message}`,
      };
    }
    const nowMs = clock();
    const outcome = decide(c, result, nowMs, hook.url);
    const written = await record(c, outcome, iso(nowMs));
    // The loop may be sleeping past this retry's time (it last saw the lease end): let it look again.
    if (outcome.status === 'pending') wake();
    const fields = {
      delivery: c.id,
      webhook: c.webhook_id,
      status: result.statusCode,
      ms: result.durationMs,
    };
    if (!written) log.warn(fields, 'delivery changed hands or was deleted during the attempt');
    else if (result.ok) log.debug(fields, 'webhook delivered');
    else
      log.info(
        { ...fields, error: result.error, next: outcome.nextAttemptAt, disabled: outcome.disable },
        'webhook attempt failed',
      );
  };

  const start = (c: ClaimedDelivery, targets: Targets) => {
    bump(hookLoad, c.webhook_id, 1);
    bump(accountLoad, c.account_id, 1);
    const p: Promise<void> = deliver(c, targets)
      .catch((err: unknown) =>
        log.error({ err, delivery: c.id }, 'delivery attempt crashed; the lease will expire'),
      )
      .finally(() => {
        inFlight.delete(p);
        bump(hookLoad, c.webhook_id, -1);
        bump(accountLoad, c.account_id, -1);
      });
    inFlight.add(p);
  };

  // With a backlog, one claim (one commit) per freed slot costs more than the attempts: wait a
  // moment for `n` slots to be free so one claim fills several, but never long enough for a slow
  // receiver holding the other slots to stall the rest.
  const slotsFree = async (n: number, maxWaitMs: number) => {
    const deadline = Date.now() + maxWaitMs;
    while (concurrency - inFlight.size < n && !stopping) {
      const left = deadline - Date.now();
      if (left <= 0) return;
      await Promise.race([Promise.race(inFlight), delay(left)]);
    }
  };

  const loop = async () => {
    let backlog = false;
    let reachAfter = 0;
    while (!stopping) {
      try {
        if (backlog) await slotsFree(Math.ceil(concurrency / 2), COALESCE_MS);
        // slotsFree returns at once on stop(): take no new work from the signal on.
        if (stopping) break;
        const free = concurrency - inFlight.size;
        if (free <= 0) {
          await Promise.race(inFlight); // attempts never reject (see start)
          continue;
        }
        woken = false;
        const limit = Math.min(free, batchSize);
        const nowMs = clock();
        const riding = queued.splice(0, MAX_GROUP_COMMIT);
        let round: Awaited<ReturnType<typeof claimWithTargets>>;
        // Real time, not the injected clock: this paces the worker's own work.
        const reach = performance.now() >= reachAfter;
        try {
          round = await claimWithTargets(
            database.db,
            database.dialect,
            {
              now: iso(nowMs),
              leaseUntil: iso(nowMs + leaseMs),
              limit,
              token: randomBytes(12).toString('base64url'),
              share,
              reach,
              onLeftOut: (ms) => {
                reachAfter = performance.now() + Math.max(REACH_MIN_MS, ms / REACH_SHARE);
              },
            },
            riding,
          );
        } catch (err) {
          for (const item of riding) item.fail(err);
          throw err;
        }
        const { claimed, targets, written } = round;
        for (const [i, item] of riding.entries()) item.done(written[i] ?? false);
        if (stopping) {
          // The signal came during the claim: give the claimed deliveries back, unattempted, so
          // they fall due now for another worker, not once their leases run out.
          await releaseClaims(database.db, claimed, iso(clock()));
          break;
        }
        for (const c of claimed) start(c, targets);
        backlog = claimed.length === limit;
        if (backlog) continue; // more may be due: claim again as slots free up
        if (anyAtShare() && inFlight.size > 0) {
          // Work was left out for its share, not for want of due rows: look again as soon as an
          // attempt ends (or new work arrives), not after the idle pause, and, if this claim did
          // not reach past those at their share, once the next one may.
          const untilReach = reach ? pollMs : Math.ceil(reachAfter - performance.now());
          await pause(Math.max(1, Math.min(pollMs, untilReach)), Promise.race(inFlight));
          continue;
        }
        const next = await nextDueAt(database.db);
        const untilNext = next === null ? pollMs : Date.parse(next) - clock();
        await pause(Math.min(pollMs, Math.max(claimed.length > 0 ? 0 : MIN_IDLE_MS, untilNext)));
      } catch (err) {
        if (stopping) break;
        log.error({ err }, 'delivery loop failed; retrying after the poll interval');
        await pause(pollMs);
      }
    }
  };

  const ready = listener ? listener.ready : Promise.resolve();
  const running = loop();
  let stopped: Promise<void> | undefined;
  return {
    name: 'webhook-deliveries',
    ready,
    wake,
    stop() {
      // Idempotent: a second call waits for the first shutdown.
      stopped ??= (async () => {
        stopping = true;
        interrupt?.();
        await running;
        await Promise.allSettled([...inFlight]);
        unsubscribe();
        await listener?.close();
        if (ownDispatcher) await (dispatcher as { close?: () => Promise<void> }).close?.();
      })();
      return stopped;
    },
  };
}
