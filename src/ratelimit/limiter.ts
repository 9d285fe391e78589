import type { Redis } from 'ioredis';
import { ioredis } from '../lib/optional-modules.ts';
import { type Clock, systemClock } from '../lib/time.ts';
import { PLAN_LIMITS, type Plan, type PlanLimits, WINDOW_SECONDS, type WindowName } from './plans.ts';

/** One aligned window as seen by one request. */
export type RateWindow = {
  name: WindowName;
  limit: number;
  remaining: number;
  /** Epoch seconds at which the window ends (next minute, next 00:00 UTC). */
  resetAt: number;
  /** Whole seconds (1..window length) from the limiter's clock until `resetAt`; feeds `RateLimit: t=`. */
  resetIn: number;
};

/** Outcome of one `consume`; windows are listed minute first, empty when unlimited. */
export type RateDecision = {
  limited: boolean;
  unlimited: boolean;
  windows: RateWindow[];
  /** Only when limited: whole seconds (>= 1) until every exhausted window has reset. */
  retryAfter?: number;
  /** Only when limited: the exhausted window that sets `retryAfter` (the one that resets last). */
  refusedBy?: 'minute' | 'day';
};

/**
 * `used` is what counts against the budget, capped at `limit`, so `used + remaining = limit`.
 * Refused attempts are charged (docs/api.md): one the minute refuses to the minute only, one the
 * day refuses to both; so just after a plan change the minute can show more used than the day.
 */
export type RateUsageWindow = RateWindow & { used: number };

/** Current counts of a key, read without consuming (for `GET /account`). */
export type RateUsage = { unlimited: boolean; windows: RateUsageWindow[] };

export type RateLimiterHealth = { backend: 'memory' | 'redis'; degraded: boolean; detail?: string };

/** The pino-compatible subset the limiter logs through. */
export type RateLimiterLogger = {
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
};

export type RateLimiterOptions = {
  /**
   * Shared counters in Redis; without it counters live in this process only. `commandTimeoutMs`: a
   * counter command not answered by then counts on the per-process fallback (default 1,000: a
   * request never waits longer on Redis). `breakMs`: how long the fallback is kept after a failed
   * command before Redis is tried again (default BREAK_MS).
   */
  redis?: { url: string; keyPrefix: string; commandTimeoutMs?: number; breakMs?: number };
  /** Milliseconds since the epoch; decides which aligned window a request falls in. */
  now?: Clock;
  logger?: RateLimiterLogger;
};

export type RateLimiter = {
  consume(keyId: string, plan: Plan): Promise<RateDecision>;
  usage(keyId: string, plan: Plan): Promise<RateUsage>;
  health(): RateLimiterHealth;
  close(): Promise<void>;
};

const MINUTE_MS = WINDOW_SECONDS.minute * 1000;
const DAY_MS = WINDOW_SECONDS.day * 1000;
const MAX_KEY_ID_LENGTH = 200;
const LOG_EVERY_MS = 60_000;
const CONNECT_TIMEOUT_MS = 2_000;
const COMMAND_TIMEOUT_MS = 1_000;
/**
 * After a Redis command fails (a timeout: Redis hung, or the network to it dropped packets without
 * a reset), counters stay on the per-process fallback this long before Redis is tried again.
 * Without it a hung Redis, whose connection still reads as ready, cost every request the whole
 * command timeout.
 */
const BREAK_MS = 5_000;
/** Redis counters outlive their window end by this much, so instances with skewed clocks still share them. */
const EXPIRY_GRACE_MS = 10_000;

const consoleLogger: RateLimiterLogger = {
  warn: (obj, msg) => console.warn(msg, obj),
  error: (obj, msg) => console.error(msg, obj),
  info: () => {},
};

/** Counts of one key: the minute counts every attempt, the day those the minute allowed. */
type Counts = { minute: number; day: number };

/** The aligned windows one clock reading falls in. */
type Place = { nowMs: number; minute: number; day: number };

/**
 * In-process counters: one slot per key holding its current minute and day window, so a request costs
 * one Map lookup and no timer. A window never moves backwards for a key (a clock stepping back keeps
 * counting in the later window, never grants a fresh budget). Slots of keys idle since an earlier UTC
 * day are dropped when the day changes.
 */
class LocalCounters {
  readonly #slots = new Map<string, { minute: number; minuteUsed: number; day: number; dayUsed: number }>();
  #sweptDay = Number.NEGATIVE_INFINITY;

  consume(keyId: string, at: Place, minuteLimit: number): Counts {
    if (at.day > this.#sweptDay) this.#sweep(at.day);
    let slot = this.#slots.get(keyId);
    if (slot === undefined) {
      slot = { minute: at.minute, minuteUsed: 0, day: at.day, dayUsed: 0 };
      this.#slots.set(keyId, slot);
    }
    if (at.minute > slot.minute) {
      slot.minute = at.minute;
      slot.minuteUsed = 0;
    }
    if (at.day > slot.day) {
      slot.day = at.day;
      slot.dayUsed = 0;
    }
    const minute = ++slot.minuteUsed;
    const day = minute <= minuteLimit ? ++slot.dayUsed : slot.dayUsed;
    return { minute, day };
  }

  read(keyId: string, at: Place): Counts {
    const slot = this.#slots.get(keyId);
    if (slot === undefined) return { minute: 0, day: 0 };
    return {
      minute: at.minute <= slot.minute ? slot.minuteUsed : 0,
      day: at.day <= slot.day ? slot.dayUsed : 0,
    };
  }

  #sweep(day: number) {
    this.#sweptDay = day;
    for (const [keyId, slot] of this.#slots) if (slot.day < day) this.#slots.delete(keyId);
  }
}

type Backend = {
  consume(keyId: string, at: Place, minuteLimit: number): Counts | Promise<Counts>;
  read(keyId: string, at: Place): Counts | Promise<Counts>;
  /** Resolves once the first connection attempt has settled; consuming earlier would skip Redis. */
  ready: Promise<void>;
  health(): RateLimiterHealth;
  close(): Promise<void>;
};

function memoryBackend(): Backend {
  const counters = new LocalCounters();
  return {
    consume: (keyId, at, minuteLimit) => counters.consume(keyId, at, minuteLimit),
    read: (keyId, at) => counters.read(keyId, at),
    ready: Promise.resolve(),
    health: () => ({ backend: 'memory', degraded: false }),
    close: async () => {},
  };
}

/**
 * One round trip for every request that reached the limiter in this event-loop turn, atomically, in
 * order. Per request (a pair of keys and three arguments): count the minute; count the day only if
 * the minute allows the request, otherwise read it. A counter's expiry is set when it is created, at
 * its window's end by the caller's clock plus a grace period.
 * KEYS: minute and day counter of each request. ARGV: minute limit, minute TTL ms, day TTL ms of each
 * request. Returns the minute and day counts of each request, flattened.
 */
export const CONSUME_SCRIPT = `
local out = {}
for i = 1, #KEYS, 2 do
  local arg = (i - 1) / 2 * 3
  local minute = redis.call('INCR', KEYS[i])
  if minute == 1 then redis.call('PEXPIRE', KEYS[i], ARGV[arg + 2]) end
  local day
  if minute <= tonumber(ARGV[arg + 1]) then
    day = redis.call('INCR', KEYS[i + 1])
    if day == 1 then redis.call('PEXPIRE', KEYS[i + 1], ARGV[arg + 3]) end
  else
    day = tonumber(redis.call('GET', KEYS[i + 1]) or '0')
  end
  out[i] = minute
  out[i + 1] = day
end
return out
`;

/** Requests per script call at most, so one call never holds Redis for long. */
const MAX_BATCH = 128;

type ScriptedRedis = Redis & {
  adsRateConsume(numberOfKeys: number, ...keysThenArgs: (string | number)[]): Promise<number[]>;
};

type PendingConsume = {
  minuteKey: string;
  dayKey: string;
  args: [minuteLimit: number, minuteTtlMs: number, dayTtlMs: number];
  resolve: (counts: Counts) => void;
  reject: (err: unknown) => void;
};

/**
 * Sends every consume queued during one event-loop turn as one script call: the per-command cost
 * of the client (and of Redis) is paid once per turn, not once per request (docs/benchmarks.md).
 */
function consumeBatcher(client: ScriptedRedis) {
  let queue: PendingConsume[] = [];
  let scheduled = false;
  const send = (batch: PendingConsume[]) => {
    const keysThenArgs: (string | number)[] = [];
    for (const p of batch) keysThenArgs.push(p.minuteKey, p.dayKey);
    for (const p of batch) keysThenArgs.push(...p.args);
    // A failed call fails its whole batch over to the per-process counters, even requests Redis counted.
    let sent: Promise<number[]>;
    try {
      sent = client.adsRateConsume(batch.length * 2, ...keysThenArgs);
    } catch (err) {
      sent = Promise.reject(err);
    }
    sent.then(
      (counts) => {
        for (let i = 0; i < batch.length; i++) {
          (batch[i] as PendingConsume).resolve({
            minute: counts[2 * i] as number,
            day: counts[2 * i + 1] as number,
          });
        }
      },
      (err: unknown) => {
        for (const p of batch) p.reject(err);
      },
    );
  };
  const flush = () => {
    scheduled = false;
    const batch = queue;
    queue = [];
    for (let i = 0; i < batch.length; i += MAX_BATCH) send(batch.slice(i, i + MAX_BATCH));
  };
  return (minuteKey: string, dayKey: string, args: PendingConsume['args']) =>
    new Promise<Counts>((resolve, reject) => {
      queue.push({ minuteKey, dayKey, args, resolve, reject });
      if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
    });
}

function redisBackend(cfg: NonNullable<RateLimiterOptions['redis']>, logger: RateLimiterLogger): Backend {
  const client = new (ioredis().Redis)(cfg.url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: CONNECT_TIMEOUT_MS,
    commandTimeout: cfg.commandTimeoutMs ?? COMMAND_TIMEOUT_MS,
  }) as ScriptedRedis;
  client.defineCommand('adsRateConsume', { lua: CONSUME_SCRIPT });
  const consumeInRedis = consumeBatcher(client);
  // Per-process counts while Redis is unreachable.
  const fallback = new LocalCounters();
  let lastError: string | undefined;
  let lastFallbackAt = 0;
  let lastLoggedAt = Number.NEGATIVE_INFINITY;
  let suppressed = 0;
  let troubled = false;
  // Until then, commands skip Redis (BREAK_MS after a failed one).
  let brokenUntil = 0;
  const usable = () => client.status === 'ready' && Date.now() >= brokenUntil;

  // Loud but bounded: one error line per minute however many requests fall back.
  const trouble = (why: string) => {
    troubled = true;
    const now = Date.now();
    if (now - lastLoggedAt < LOG_EVERY_MS) {
      suppressed++;
      return;
    }
    lastLoggedAt = now;
    logger.error(
      { backend: 'redis', status: client.status, err: lastError, suppressedSinceLastLog: suppressed },
      `rate limiter: ${why}; counting per process, limits are not shared between instances`,
    );
    suppressed = 0;
  };
  const fellBack = (err?: unknown) => {
    if (err !== undefined) brokenUntil = Date.now() + (cfg.breakMs ?? BREAK_MS);
    if (err instanceof Error) lastError = err.message;
    lastFallbackAt = Date.now();
    trouble(err === undefined ? 'Redis unavailable' : 'Redis command failed');
  };

  client.on('error', (err: Error) => {
    lastError = err.message;
    trouble('Redis connection error');
  });
  // Shared again: on reconnecting, or on the first command that succeeds after failures (a hung
  // Redis that resumed never reconnects). Until then health() reports degraded.
  const recovered = () => {
    lastFallbackAt = 0;
    if (troubled) logger.info({ backend: 'redis' }, 'rate limiter: Redis reachable again, counters shared');
    troubled = false;
  };
  client.on('ready', () => {
    brokenUntil = 0;
    recovered();
  });

  const ready = new Promise<void>((resolve) => {
    const settle = () => {
      clearTimeout(timer);
      client.off('ready', settle).off('error', settle).off('end', settle);
      resolve();
    };
    const timer = setTimeout(settle, CONNECT_TIMEOUT_MS + 500);
    timer.unref();
    client.once('ready', settle).once('error', settle).once('end', settle);
  });

  const keyOf = (keyId: string, tag: string, index: number) => `${cfg.keyPrefix}:${keyId}:${tag}:${index}`;

  return {
    async consume(keyId, at, minuteLimit) {
      if (!usable()) {
        fellBack();
        return fallback.consume(keyId, at, minuteLimit);
      }
      try {
        const counted = await consumeInRedis(keyOf(keyId, 'm', at.minute), keyOf(keyId, 'd', at.day), [
          minuteLimit,
          (at.minute + 1) * MINUTE_MS - at.nowMs + EXPIRY_GRACE_MS,
          (at.day + 1) * DAY_MS - at.nowMs + EXPIRY_GRACE_MS,
        ]);
        if (lastFallbackAt !== 0) recovered();
        return counted;
      } catch (err) {
        fellBack(err);
        return fallback.consume(keyId, at, minuteLimit);
      }
    },
    async read(keyId, at) {
      if (!usable()) {
        fellBack();
        return fallback.read(keyId, at);
      }
      try {
        const [minute, day] = await client.mget(keyOf(keyId, 'm', at.minute), keyOf(keyId, 'd', at.day));
        if (lastFallbackAt !== 0) recovered();
        return { minute: Number(minute ?? 0), day: Number(day ?? 0) };
      } catch (err) {
        fellBack(err);
        return fallback.read(keyId, at);
      }
    },
    ready,
    health: () => {
      const connected = client.status === 'ready';
      if (connected && Date.now() - lastFallbackAt >= LOG_EVERY_MS)
        return { backend: 'redis', degraded: false };
      const state = connected ? 'recent Redis command failures' : `Redis ${client.status}`;
      const err = lastError ? ` (${lastError})` : '';
      return { backend: 'redis', degraded: true, detail: `${state}${err}; counting per process` };
    },
    close: async () => {
      if (client.status === 'ready') {
        try {
          await client.quit();
          return;
        } catch {
          // fall through: a failed QUIT still has to release the socket
        }
      }
      client.disconnect();
    },
  };
}

/** A window as one request sees it. */
function windowView(
  name: WindowName,
  limit: number,
  used: number,
  index: number,
  lengthMs: number,
  nowMs: number,
): RateWindow {
  const endMs = (index + 1) * lengthMs;
  return {
    name,
    limit,
    remaining: limit > used ? limit - used : 0,
    resetAt: endMs / 1000,
    resetIn: Math.max(1, Math.ceil((endMs - nowMs) / 1000)),
  };
}

/**
 * Per-key rate limiting by plan over aligned windows (decisions §8).
 *
 * A request is first counted in its minute window; only if the minute allows it is it counted in the
 * day window, so a minute-limited request never burns day quota. A request refused by the day window
 * has already spent its minute point; that only lowers the minute's remaining count, because no minute
 * can pass while the day is exhausted.
 *
 * The counters are per key and window, not per plan: a plan change mid-window keeps the usage already
 * spent, and memory and Redis behave alike. The injected clock alone decides the window.
 */
export function createRateLimiter(opts: RateLimiterOptions = {}): RateLimiter {
  const now = opts.now ?? systemClock;
  const logger = opts.logger ?? consoleLogger;
  const backend = opts.redis ? redisBackend(opts.redis, logger) : memoryBackend();
  let settled = false;
  void backend.ready.then(() => {
    settled = true;
  });

  const limitsOf = (keyId: string, plan: Plan): PlanLimits | null => {
    if (typeof keyId !== 'string' || keyId.length === 0 || keyId.length > MAX_KEY_ID_LENGTH) {
      throw new TypeError(`rate limiter: key id must be 1..${MAX_KEY_ID_LENGTH} characters`);
    }
    if (!Object.hasOwn(PLAN_LIMITS, plan)) throw new TypeError(`rate limiter: unknown plan ${String(plan)}`);
    return PLAN_LIMITS[plan];
  };

  // The clock is read once per call so both windows agree on "now".
  const placeNow = (): Place => {
    const nowMs = now();
    return { nowMs, minute: Math.floor(nowMs / MINUTE_MS), day: Math.floor(nowMs / DAY_MS) };
  };

  const windowsOf = (limits: PlanLimits, at: Place, used: Counts): [RateWindow, RateWindow] => [
    windowView('minute', limits.perMinute, used.minute, at.minute, MINUTE_MS, at.nowMs),
    windowView('day', limits.perDay, used.day, at.day, DAY_MS, at.nowMs),
  ];

  return {
    async consume(keyId, plan) {
      const limits = limitsOf(keyId, plan);
      if (!limits) return { limited: false, unlimited: true, windows: [] };
      if (!settled) await backend.ready;
      const at = placeNow();
      const used = await backend.consume(keyId, at, limits.perMinute);
      const windows = windowsOf(limits, at, used);
      if (used.minute <= limits.perMinute && used.day <= limits.perDay) {
        return { limited: false, unlimited: false, windows };
      }
      // Wait until every exhausted window has reset, or the retry is refused again.
      const [minute, day] = windows;
      const refusedBy = day.remaining === 0 && day.resetIn >= minute.resetIn ? 'day' : 'minute';
      const retryAfter = Math.max(
        1,
        minute.remaining === 0 ? minute.resetIn : 0,
        day.remaining === 0 ? day.resetIn : 0,
      );
      return { limited: true, unlimited: false, windows, retryAfter, refusedBy };
    },

    async usage(keyId, plan) {
      const limits = limitsOf(keyId, plan);
      if (!limits) return { unlimited: true, windows: [] };
      if (!settled) await backend.ready;
      const at = placeNow();
      const used = await backend.read(keyId, at);
      const [minute, day] = windowsOf(limits, at, used);
      return {
        unlimited: false,
        windows: [
          { ...minute, used: Math.min(used.minute, limits.perMinute) },
          { ...day, used: Math.min(used.day, limits.perDay) },
        ],
      };
    },

    health: () => backend.health(),
    close: () => backend.close(),
  };
}
