import { Redis } from 'ioredis';
import { type RateLimiterAbstract, RateLimiterMemory, RateLimiterRedis } from 'rate-limiter-flexible';
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
};

/** `used` is capped at `limit`: refused attempts are counted by the store but never served. */
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
  /** Shared counters in Redis; without it counters live in this process only. */
  redis?: { url: string; keyPrefix: string };
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

type WindowSpec = { name: WindowName; tag: string; seconds: number; limitOf: (l: PlanLimits) => number };

const WINDOW: Record<WindowName, WindowSpec> = {
  minute: { name: 'minute', tag: 'm', seconds: WINDOW_SECONDS.minute, limitOf: (l) => l.perMinute },
  day: { name: 'day', tag: 'd', seconds: WINDOW_SECONDS.day, limitOf: (l) => l.perDay },
};

// The stores only count; the plan limit is compared here. One counter per key and window (not per
// plan) means a plan change mid-window keeps the usage already spent, and memory and Redis behave alike.
const COUNT_ONLY_POINTS = 2 ** 31 - 1;
const MAX_KEY_ID_LENGTH = 200;
const LOG_EVERY_MS = 60_000;
const CONNECT_TIMEOUT_MS = 2_000;
const COMMAND_TIMEOUT_MS = 1_000;

const consoleLogger: RateLimiterLogger = {
  warn: (obj, msg) => console.warn(msg, obj),
  error: (obj, msg) => console.error(msg, obj),
  info: () => {},
};

/** Where `nowMs` falls in a window: the counter key suffix and when the window ends. */
function placeInWindow(spec: WindowSpec, nowMs: number) {
  const index = Math.floor(nowMs / (spec.seconds * 1000));
  const resetAt = (index + 1) * spec.seconds;
  const resetIn = Math.max(1, Math.ceil((resetAt * 1000 - nowMs) / 1000));
  return { index, resetAt, resetIn };
}

/** Memory limiter that reports each use, so the Redis limiter's fallback is visible. */
class InsuranceMemoryLimiter extends RateLimiterMemory {
  readonly #onUse: () => void;
  constructor(duration: number, onUse: () => void) {
    super({ points: COUNT_ONLY_POINTS, duration, keyPrefix: 'ads-rl-insurance' });
    this.#onUse = onUse;
  }
  override consume(key: string | number, points?: number, options?: Record<string, unknown>) {
    this.#onUse();
    return super.consume(key, points, options);
  }
  override get(key: string | number, options?: Record<string, unknown>) {
    this.#onUse();
    return super.get(key, options);
  }
}

type Backend = {
  stores: Record<WindowName, RateLimiterAbstract>;
  /** Resolves once the first connection attempt has settled; consuming earlier would skip Redis. */
  ready: Promise<void>;
  health(): RateLimiterHealth;
  close(): Promise<void>;
};

function memoryBackend(): Backend {
  const store = (seconds: number) =>
    new RateLimiterMemory({ points: COUNT_ONLY_POINTS, duration: seconds, keyPrefix: 'ads-rl' });
  return {
    stores: { minute: store(WINDOW.minute.seconds), day: store(WINDOW.day.seconds) },
    ready: Promise.resolve(),
    health: () => ({ backend: 'memory', degraded: false }),
    close: async () => {},
  };
}

function redisBackend(cfg: { url: string; keyPrefix: string }, logger: RateLimiterLogger): Backend {
  const client = new Redis(cfg.url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: CONNECT_TIMEOUT_MS,
    commandTimeout: COMMAND_TIMEOUT_MS,
  });
  let lastError: string | undefined;
  let lastFallbackAt = 0;
  let lastLoggedAt = Number.NEGATIVE_INFINITY;
  let suppressed = 0;
  let troubled = false;

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
  const onFallback = () => {
    lastFallbackAt = Date.now();
    trouble('Redis unavailable');
  };

  client.on('error', (err: Error) => {
    lastError = err.message;
    trouble('Redis connection error');
  });
  client.on('ready', () => {
    lastFallbackAt = 0;
    if (troubled) logger.info({ backend: 'redis' }, 'rate limiter: Redis reachable again, counters shared');
    troubled = false;
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

  const store = (seconds: number) =>
    new RateLimiterRedis({
      storeClient: client,
      points: COUNT_ONLY_POINTS,
      duration: seconds,
      keyPrefix: cfg.keyPrefix,
      rejectIfRedisNotReady: true,
      insuranceLimiter: new InsuranceMemoryLimiter(seconds, onFallback),
    });

  return {
    stores: { minute: store(WINDOW.minute.seconds), day: store(WINDOW.day.seconds) },
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

/**
 * Per-key rate limiting by plan over aligned windows (decisions §8).
 *
 * A request is first counted in its minute window; only if the minute allows it is it counted in the
 * day window, so a minute-limited request never burns day quota. A request refused by the day window
 * has already spent its minute point; that only lowers the minute's remaining count, because no minute
 * can pass while the day is exhausted.
 */
export function createRateLimiter(opts: RateLimiterOptions = {}): RateLimiter {
  const now = opts.now ?? systemClock;
  const logger = opts.logger ?? consoleLogger;
  const backend = opts.redis ? redisBackend(opts.redis, logger) : memoryBackend();

  const limitsOf = (keyId: string, plan: Plan): PlanLimits | null => {
    if (typeof keyId !== 'string' || keyId.length === 0 || keyId.length > MAX_KEY_ID_LENGTH) {
      throw new TypeError(`rate limiter: key id must be 1..${MAX_KEY_ID_LENGTH} characters`);
    }
    if (!Object.hasOwn(PLAN_LIMITS, plan)) throw new TypeError(`rate limiter: unknown plan ${String(plan)}`);
    return PLAN_LIMITS[plan];
  };

  // The injected clock picks the window through the index in the key; the store's own TTL runs on real
  // time from the first hit, one window long, so it only collects old counters and outlives the window.
  // The clock is read once per call so both windows agree on "now".
  const windowsAt = (keyId: string, limits: PlanLimits) => {
    const nowMs = now();
    const at = (spec: WindowSpec) => {
      const place = placeInWindow(spec, nowMs);
      return {
        ...place,
        name: spec.name,
        limit: spec.limitOf(limits),
        key: `${keyId}:${spec.tag}:${place.index}`,
      };
    };
    return { minute: at(WINDOW.minute), day: at(WINDOW.day) };
  };
  type Placed = ReturnType<typeof windowsAt>['minute'];

  const view = (w: Placed, used: number): RateWindow => ({
    name: w.name,
    limit: w.limit,
    remaining: Math.max(0, w.limit - used),
    resetAt: w.resetAt,
    resetIn: w.resetIn,
  });

  const readCount = async (name: WindowName, key: string) =>
    (await backend.stores[name].get(key))?.consumedPoints ?? 0;

  return {
    async consume(keyId, plan) {
      const limits = limitsOf(keyId, plan);
      if (!limits) return { limited: false, unlimited: true, windows: [] };
      await backend.ready;
      const { minute, day } = windowsAt(keyId, limits);
      const minuteUsed = (await backend.stores.minute.consume(minute.key)).consumedPoints;
      const minuteOk = minuteUsed <= minute.limit;
      const dayUsed = minuteOk
        ? (await backend.stores.day.consume(day.key)).consumedPoints
        : await readCount('day', day.key);
      const windows = [view(minute, minuteUsed), view(day, dayUsed)];
      if (minuteOk && dayUsed <= day.limit) return { limited: false, unlimited: false, windows };
      // Wait until every exhausted window has reset, or the retry is refused again.
      const retryAfter = Math.max(1, ...windows.filter((w) => w.remaining === 0).map((w) => w.resetIn));
      return { limited: true, unlimited: false, windows, retryAfter };
    },

    async usage(keyId, plan) {
      const limits = limitsOf(keyId, plan);
      if (!limits) return { unlimited: true, windows: [] };
      await backend.ready;
      const { minute, day } = windowsAt(keyId, limits);
      const [minuteUsed, dayUsed] = await Promise.all([
        readCount('minute', minute.key),
        readCount('day', day.key),
      ]);
      return {
        unlimited: false,
        windows: [
          { ...view(minute, minuteUsed), used: Math.min(minuteUsed, minute.limit) },
          { ...view(day, dayUsed), used: Math.min(dayUsed, day.limit) },
        ],
      };
    },

    health: () => backend.health(),
    close: () => backend.close(),
  };
}
