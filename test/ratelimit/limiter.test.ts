import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:net';
import { after, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import {
  CONSUME_SCRIPT,
  createRateLimiter,
  type RateDecision,
  type RateLimiter,
  type RateLimiterLogger,
} from '../../src/ratelimit/limiter.ts';

const REDIS_URL = process.env.ADS_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const REDIS_REQUIRED = process.env.CI === 'true' || process.env.ADS_TEST_REDIS_URL !== undefined;
const PREFIX = `ads-test:rl:${randomUUID()}`;
const MINUTE = 60_000;

/** A direct client for assertions and cleanup, or the reason Redis cannot be used. */
async function connectRedis(): Promise<{ client: Redis } | { reason: string }> {
  const client = new Redis(REDIS_URL, {
    lazyConnect: true,
    enableOfflineQueue: false,
    connectTimeout: 1_000,
    retryStrategy: () => null,
  });
  let cause = '';
  client.on('error', (err: Error) => {
    cause ||= err.message;
  });
  try {
    await client.connect();
    await client.ping();
    return { client };
  } catch (err) {
    client.disconnect();
    return { reason: `Redis at ${REDIS_URL} unreachable (${cause || (err as Error).message})` };
  }
}

const redis = await connectRedis();
const redisClient = 'client' in redis ? redis.client : undefined;

after(async () => {
  if (!redisClient) return;
  const keys = await redisClient.keys(`${PREFIX}:*`);
  if (keys.length > 0) await redisClient.del(...keys);
  assert.deepEqual(await redisClient.keys(`${PREFIX}:*`), []);
  await redisClient.quit();
});

/** A settable clock, in milliseconds. */
function fakeClock(start: number) {
  const clock = { t: start, now: () => clock.t };
  return clock;
}

const newKey = () => `key_${randomUUID()}`;
const remainingOf = (d: RateDecision, name: 'minute' | 'day') =>
  d.windows.find((w) => w.name === name)?.remaining;

type Make = (now: () => number) => RateLimiter;

/** The same behaviour, whichever backend counts. */
function limiterCases(make: Make, backend: 'memory' | 'redis') {
  async function withLimiter(
    start: number,
    fn: (l: RateLimiter, clock: ReturnType<typeof fakeClock>) => Promise<void>,
  ) {
    const clock = fakeClock(start);
    const limiter = make(clock.now);
    try {
      await fn(limiter, clock);
      // Guards against a Redis suite that silently passed on the in-memory insurance limiter.
      assert.deepEqual(limiter.health(), { backend, degraded: false });
    } finally {
      await limiter.close();
    }
  }

  test('the 60th request in a minute passes, the 61st is limited; remaining counts down', async () => {
    await withLimiter(Date.UTC(2030, 0, 15, 12, 30, 0), async (limiter) => {
      const key = newKey();
      const decisions: RateDecision[] = [];
      for (let i = 0; i < 60; i++) decisions.push(await limiter.consume(key, 'free'));
      assert.ok(decisions.every((d) => !d.limited && !d.unlimited && d.retryAfter === undefined));
      assert.deepEqual(
        decisions.map((d) => remainingOf(d, 'minute')),
        Array.from({ length: 60 }, (_, i) => 59 - i),
      );
      assert.deepEqual(decisions[59]?.windows, [
        {
          name: 'minute',
          limit: 60,
          remaining: 0,
          resetAt: Date.UTC(2030, 0, 15, 12, 31) / 1000,
          resetIn: 60,
        },
        {
          name: 'day',
          limit: 10_000,
          remaining: 9_940,
          resetAt: Date.UTC(2030, 0, 16) / 1000,
          resetIn: 41_400,
        },
      ]);
      const refused = await limiter.consume(key, 'free');
      assert.equal(refused.limited, true);
      assert.equal(refused.retryAfter, 60);
      assert.equal(refused.refusedBy, 'minute');
      assert.equal(remainingOf(refused, 'minute'), 0);
      assert.equal(remainingOf(refused, 'day'), 9_940, 'a minute-limited request does not burn day quota');
      await limiter.consume(key, 'free');
      const usage = await limiter.usage(key, 'free');
      assert.deepEqual(
        usage.windows.map((w) => [w.name, w.used, w.remaining]),
        [
          ['minute', 60, 0],
          ['day', 60, 9_940],
        ],
      );
    });
  });

  test('the minute resets at the next aligned minute', async () => {
    await withLimiter(Date.UTC(2030, 0, 15, 12, 30, 59, 500), async (limiter, clock) => {
      const key = newKey();
      for (let i = 0; i < 60; i++) assert.equal((await limiter.consume(key, 'free')).limited, false);
      const refused = await limiter.consume(key, 'free');
      assert.equal(refused.limited, true);
      assert.equal(refused.retryAfter, 1);
      assert.equal(refused.windows[0]?.resetAt, Date.UTC(2030, 0, 15, 12, 31) / 1000);
      clock.t = Date.UTC(2030, 0, 15, 12, 30, 59, 999);
      assert.equal((await limiter.consume(key, 'free')).limited, true, 'still the same minute');
      clock.t = Date.UTC(2030, 0, 15, 12, 31, 0);
      const next = await limiter.consume(key, 'free');
      assert.equal(next.limited, false);
      assert.equal(remainingOf(next, 'minute'), 59);
      assert.equal(remainingOf(next, 'day'), 9_939);
    });
  });

  test('the day allows 10,000, then limits until 00:00 UTC; both exhausted -> the longer wait', async () => {
    const dayStart = Date.UTC(2030, 0, 15);
    await withLimiter(dayStart, async (limiter, clock) => {
      const key = newKey();
      const decisions: RateDecision[] = [];
      for (let sent = 0; sent < 10_000; sent += 60) {
        clock.t = dayStart + (sent / 60) * MINUTE;
        const batch = Math.min(60, 10_000 - sent);
        decisions.push(
          ...(await Promise.all(Array.from({ length: batch }, () => limiter.consume(key, 'free')))),
        );
      }
      assert.equal(decisions.length, 10_000);
      assert.ok(decisions.every((d) => !d.limited));
      assert.equal(Math.min(...decisions.map((d) => remainingOf(d, 'day') ?? -1)), 0);
      // 166 full minutes plus 40 requests: 02:46, minute has 20 left, the day none.
      const waitToMidnight = 86_400 - 166 * 60;
      const dayRefused = await limiter.consume(key, 'free');
      assert.equal(dayRefused.limited, true);
      assert.equal(dayRefused.retryAfter, waitToMidnight);
      assert.equal(dayRefused.refusedBy, 'day');
      assert.deepEqual(dayRefused.windows[1], {
        name: 'day',
        limit: 10_000,
        remaining: 0,
        resetAt: Date.UTC(2030, 0, 16) / 1000,
        resetIn: waitToMidnight,
      });
      clock.t += 30_000;
      for (let i = 0; i < 19; i++) await limiter.consume(key, 'free');
      const both = await limiter.consume(key, 'free');
      assert.equal(both.limited, true);
      assert.deepEqual(
        both.windows.map((w) => w.remaining),
        [0, 0],
      );
      assert.equal(both.retryAfter, waitToMidnight - 30);
      // The day sets the wait, so the day is the window named (the minute is exhausted too).
      assert.equal(both.refusedBy, 'day');
      clock.t = Date.UTC(2030, 0, 16);
      const tomorrow = await limiter.consume(key, 'free');
      assert.equal(tomorrow.limited, false);
      assert.equal(remainingOf(tomorrow, 'day'), 9_999);
    });
  });

  test('pro allows 300 a minute and 100,000 a day', async () => {
    await withLimiter(Date.UTC(2030, 0, 15, 8, 0, 10), async (limiter) => {
      const key = newKey();
      const passed = await Promise.all(Array.from({ length: 300 }, () => limiter.consume(key, 'pro')));
      assert.ok(passed.every((d) => !d.limited));
      const refused = await limiter.consume(key, 'pro');
      assert.equal(refused.limited, true);
      assert.equal(refused.retryAfter, 50);
      assert.deepEqual(
        refused.windows.map((w) => [w.name, w.limit, w.remaining]),
        [
          ['minute', 300, 0],
          ['day', 100_000, 99_700],
        ],
      );
    });
  });

  test('enterprise is unlimited and never counted', async () => {
    await withLimiter(Date.UTC(2030, 0, 15, 8, 0, 0), async (limiter) => {
      const key = newKey();
      for (let i = 0; i < 500; i++) {
        assert.deepEqual(await limiter.consume(key, 'enterprise'), {
          limited: false,
          unlimited: true,
          windows: [],
        });
      }
      assert.deepEqual(await limiter.usage(key, 'enterprise'), { unlimited: true, windows: [] });
      assert.equal(remainingOf(await limiter.consume(key, 'free'), 'minute'), 59);
    });
  });

  test('keys are counted apart; usage reads without consuming; a plan change keeps the usage', async () => {
    await withLimiter(Date.UTC(2030, 0, 15, 8, 0, 0), async (limiter) => {
      const [a, b] = [newKey(), newKey()];
      for (let i = 0; i < 61; i++) await limiter.consume(a, 'free');
      assert.equal((await limiter.consume(a, 'free')).limited, true);
      const fresh = await limiter.consume(b, 'free');
      assert.equal(fresh.limited, false);
      assert.equal(remainingOf(fresh, 'minute'), 59);
      assert.equal((await limiter.usage(b, 'free')).windows[0]?.used, 1);
      assert.equal((await limiter.usage(b, 'free')).windows[0]?.used, 1);
      const upgraded = await limiter.consume(a, 'pro');
      assert.equal(upgraded.limited, false);
      assert.equal(remainingOf(upgraded, 'minute'), 300 - 63);
      // 61 served today; the two refused attempts count against the minute's budget only, and
      // used + remaining is the new plan's limit.
      assert.deepEqual(
        (await limiter.usage(a, 'pro')).windows.map((w) => [
          w.name,
          w.used,
          w.limit - w.used === w.remaining,
        ]),
        [
          ['minute', 63, true],
          ['day', 61, true],
        ],
      );
    });
  });
}

describe('rate limiter, memory backend', () => {
  limiterCases((now) => createRateLimiter({ now }), 'memory');

  test('a clock stepping back never grants a fresh minute; a key idle since yesterday starts afresh', async () => {
    const clock = fakeClock(Date.UTC(2030, 0, 15, 23, 59, 30));
    const limiter = createRateLimiter({ now: clock.now });
    try {
      const key = newKey();
      for (let i = 0; i < 60; i++) await limiter.consume(key, 'free');
      clock.t = Date.UTC(2030, 0, 15, 23, 58, 59);
      assert.equal((await limiter.consume(key, 'free')).limited, true, 'still counted in the later minute');
      clock.t = Date.UTC(2030, 0, 16, 0, 0, 5);
      assert.deepEqual(
        (await limiter.usage(key, 'free')).windows.map((w) => w.used),
        [0, 0],
      );
      const fresh = await limiter.consume(key, 'free');
      assert.deepEqual(
        fresh.windows.map((w) => w.remaining),
        [59, 9_999],
      );
    } finally {
      await limiter.close();
    }
  });
});

// These cases test counting, not Redis timeouts: a generous command timeout keeps a machine that
// stalls for a second (a loaded CI host) from moving them onto the per-process fallback, which
// withLimiter would rightly report as degraded.
const makeRedis: Make = (now) =>
  createRateLimiter({ now, redis: { url: REDIS_URL, keyPrefix: PREFIX, commandTimeoutMs: 15_000 } });
const skipRedis = redisClient
  ? false
  : `${'reason' in redis ? redis.reason : ''}; set ADS_TEST_REDIS_URL to run`;

if (!redisClient && REDIS_REQUIRED) {
  test('Redis is reachable (required: CI=true or ADS_TEST_REDIS_URL is set)', () => {
    assert.fail(`${'reason' in redis ? redis.reason : ''}; check ADS_TEST_REDIS_URL`);
  });
}

describe('rate limiter, Redis backend', { skip: REDIS_REQUIRED ? false : skipRedis }, () => {
  if (!redisClient) return;
  limiterCases(makeRedis, 'redis');

  test('counters live in Redis under the prefix, keyed by aligned window', async () => {
    const now = Date.UTC(2030, 0, 15, 9, 15, 20);
    const limiter = makeRedis(() => now);
    const key = newKey();
    for (let i = 0; i < 3; i++) await limiter.consume(key, 'free');
    await limiter.close();
    const minuteKey = `${PREFIX}:${key}:m:${Math.floor(now / MINUTE)}`;
    assert.equal(await redisClient.get(minuteKey), '3');
    assert.equal(await redisClient.get(`${PREFIX}:${key}:d:${Math.floor(now / 86_400_000)}`), '3');
    const ttl = await redisClient.ttl(minuteKey);
    assert.ok(ttl > 0 && ttl <= 60, `minute counter expires (ttl ${ttl})`);
  });

  test('one script call counts both windows; expiry is set once, at the aligned window end plus 10 s', async () => {
    const clock = fakeClock(Date.UTC(2030, 0, 15, 9, 15, 20));
    const limiter = makeRedis(clock.now);
    const key = newKey();
    const minuteKey = `${PREFIX}:${key}:m:${Math.floor(clock.t / MINUTE)}`;
    const dayKey = `${PREFIX}:${key}:d:${Math.floor(clock.t / 86_400_000)}`;
    try {
      await limiter.consume(key, 'free');
      const [minuteTtl, dayTtl] = [await redisClient.pttl(minuteKey), await redisClient.pttl(dayKey)];
      // 40 s to the minute's end and 14:44:40 to midnight, each plus the 10 s grace (less elapsed real time).
      assert.ok(minuteTtl > 45_000 && minuteTtl <= 50_000, `minute pttl ${minuteTtl}`);
      const toMidnight = (14 * 3600 + 44 * 60 + 40) * 1000 + 10_000;
      assert.ok(dayTtl > toMidnight - 5_000 && dayTtl <= toMidnight, `day pttl ${dayTtl}`);
      // Later requests in the same windows do not move the expiry (it would shrink to 20 s here).
      clock.t += 30_000;
      await limiter.consume(key, 'free');
      assert.ok((await redisClient.pttl(minuteKey)) > 40_000);
      assert.equal(await redisClient.get(minuteKey), '2');
      assert.equal(await redisClient.get(dayKey), '2');
    } finally {
      await limiter.close();
    }
  });

  test('the script: requests in one call are counted in order; the day only while the minute allows', async () => {
    const id = randomUUID();
    const [m, d, m2, d2] = ['m', 'd', 'm2', 'd2'].map((t) => `${PREFIX}:script:${id}:${t}`) as [
      string,
      string,
      string,
      string,
    ];
    const args = [2, 60_000, 3_600_000];
    const run = async (pairs: [string, string][]) =>
      (await redisClient.eval(
        CONSUME_SCRIPT,
        pairs.length * 2,
        ...pairs.flat(),
        ...pairs.flatMap(() => args),
      )) as number[];
    assert.deepEqual(await run([[m, d]]), [1, 1]);
    // Three requests of one key and one of another in one call, as one event-loop turn sends them.
    assert.deepEqual(
      await run([
        [m, d],
        [m2, d2],
        [m, d],
        [m, d],
      ]),
      [2, 2, 1, 1, 3, 2, 4, 2],
      'over the minute limit (2): the day is read, not counted',
    );
    for (const k of [m, d, m2, d2]) assert.ok((await redisClient.pttl(k)) > 0, `${k} expires`);
  });

  test('400 concurrent requests of one key, queued into shared script calls, stay exact', async () => {
    const now = Date.UTC(2030, 0, 15, 9, 30, 0);
    const limiter = makeRedis(() => now);
    const key = newKey();
    try {
      const decisions = await Promise.all(Array.from({ length: 400 }, () => limiter.consume(key, 'pro')));
      assert.equal(decisions.filter((d) => !d.limited).length, 300);
      assert.deepEqual(
        decisions
          .filter((d) => !d.limited)
          .map((d) => d.windows[0]?.remaining)
          .sort((a, b) => (a ?? 0) - (b ?? 0)),
        Array.from({ length: 300 }, (_, i) => i),
      );
      assert.equal(await redisClient.get(`${PREFIX}:${key}:m:${Math.floor(now / MINUTE)}`), '400');
      assert.equal(await redisClient.get(`${PREFIX}:${key}:d:${Math.floor(now / 86_400_000)}`), '300');
      assert.deepEqual(limiter.health(), { backend: 'redis', degraded: false });
    } finally {
      await limiter.close();
    }
  });

  test('a failing Redis command falls back to per-process counts and shows degraded, until one succeeds', async () => {
    const now = Date.UTC(2030, 0, 15, 9, 20, 0);
    const logs: string[] = [];
    const infos: string[] = [];
    const logger: RateLimiterLogger = {
      info: (_o, m) => infos.push(m),
      warn: () => {},
      error: (_o, m) => logs.push(m),
    };
    // No break after the failure, so the next command goes to Redis at once.
    const limiter = createRateLimiter({
      now: () => now,
      logger,
      redis: { url: REDIS_URL, keyPrefix: PREFIX, breakMs: 0 },
    });
    const key = newKey();
    try {
      assert.equal((await limiter.consume(key, 'free')).windows[0]?.remaining, 59);
      // A counter of the wrong type makes INCR fail on the server.
      await redisClient.del(`${PREFIX}:${key}:m:${Math.floor(now / MINUTE)}`);
      await redisClient.hset(`${PREFIX}:${key}:m:${Math.floor(now / MINUTE)}`, 'x', '1');
      const fallback = await limiter.consume(key, 'free');
      assert.equal(fallback.limited, false);
      assert.equal(fallback.windows[0]?.remaining, 59, 'counted by this process alone');
      const health = limiter.health();
      assert.equal(health.degraded, true);
      assert.match(health.detail ?? '', /recent Redis command failures \(WRONGTYPE.*counting per process/);
      assert.equal(logs.length, 1);
      // Redis counts again: shared, and no longer degraded (not a minute later).
      await redisClient.del(`${PREFIX}:${key}:m:${Math.floor(now / MINUTE)}`);
      assert.equal((await limiter.consume(key, 'free')).windows[0]?.remaining, 59, 'counted in Redis');
      assert.equal(await redisClient.get(`${PREFIX}:${key}:m:${Math.floor(now / MINUTE)}`), '1');
      assert.deepEqual(limiter.health(), { backend: 'redis', degraded: false });
      assert.deepEqual(infos, ['rate limiter: Redis reachable again, counters shared']);
    } finally {
      await limiter.close();
    }
  });
});

describe('rate limiter, Redis unreachable', () => {
  test('still answers, limits per process, reports degraded and logs once', async () => {
    const port = await unusedPort();
    const logs: Record<'info' | 'warn' | 'error', string[]> = { info: [], warn: [], error: [] };
    const logger: RateLimiterLogger = {
      info: (_o, m) => logs.info.push(m),
      warn: (_o, m) => logs.warn.push(m),
      error: (_o, m) => logs.error.push(m),
    };
    const now = () => Date.UTC(2030, 0, 15, 10, 0, 0);
    const redisOpts = { url: `redis://127.0.0.1:${port}`, keyPrefix: PREFIX };
    const first = createRateLimiter({ now, logger, redis: redisOpts });
    const second = createRateLimiter({ now, logger: { ...logger, error: () => {} }, redis: redisOpts });
    try {
      const key = newKey();
      const decisions: RateDecision[] = [];
      for (let i = 0; i < 61; i++) decisions.push(await first.consume(key, 'free'));
      assert.equal(decisions.filter((d) => !d.limited).length, 60);
      assert.equal(decisions[60]?.limited, true);
      assert.equal(decisions[60]?.retryAfter, 60);
      assert.equal((await first.usage(key, 'free')).windows[0]?.used, 60);
      // Each process counts on its own while Redis is away.
      assert.equal(remainingOf(await second.consume(key, 'free'), 'minute'), 59);
      const health = first.health();
      assert.equal(health.backend, 'redis');
      assert.equal(health.degraded, true);
      assert.match(health.detail ?? '', /ECONNREFUSED.*counting per process/);
      assert.equal(logs.error.length, 1, 'one error line, not one per request');
      assert.match(logs.error[0] ?? '', /counting per process/);
    } finally {
      await Promise.all([first.close(), second.close()]);
    }
  });
});

// A hung Redis (paused here with SIGSTOP, as a network partition without a reset looks): the
// connection still reads as ready, and every command waits out its timeout. After one fails, the
// counters stay on the fallback for a while instead of sending every request's command to wait.
describe('rate limiter, Redis hung', { skip: REDIS_REQUIRED ? false : skipRedis }, () => {
  test('after a command times out, requests count per process without waiting on Redis', async () => {
    const port = await unusedPort();
    const server = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      {
        stdio: 'ignore',
      },
    );
    const direct = new Redis({ port, host: '127.0.0.1', retryStrategy: () => 100 });
    direct.on('error', () => {});
    const logger: RateLimiterLogger = { info: () => {}, warn: () => {}, error: () => {} };
    let limiter: RateLimiter | undefined;
    try {
      await waitFor(async () => (await direct.ping().catch(() => null)) === 'PONG');
      limiter = createRateLimiter({
        logger,
        redis: { url: `redis://127.0.0.1:${port}`, keyPrefix: PREFIX, commandTimeoutMs: 200 },
      });
      await waitFor(async () => !limiter!.health().degraded);
      const key = newKey();
      assert.equal(remainingOf(await limiter.consume(key, 'free'), 'minute'), 59, 'counted in Redis');
      server.kill('SIGSTOP');
      const decisions: RateDecision[] = [];
      for (let i = 0; i < 10; i++) decisions.push(await limiter.consume(key, 'free'));
      assert.ok(decisions.every((d) => !d.limited));
      assert.equal(limiter.health().degraded, true);
      server.kill('SIGCONT');
      // What Redis counted: the request before the hang, and the one command that timed out (Redis
      // runs it once it resumes). Each of the other nine went straight to the fallback.
      const keys = await direct.keys(`${PREFIX}:${key}:m:*`);
      assert.equal(keys.length, 1);
      await waitFor(async () => Number(await direct.get(keys[0]!)) >= 2);
      assert.equal(
        Number(await direct.get(keys[0]!)),
        2,
        'no command sent to the hung Redis after the first failed',
      );
    } finally {
      server.kill('SIGCONT');
      await limiter?.close();
      direct.disconnect();
      server.kill('SIGKILL');
    }
  });
});

/** Polls `check` every 50 ms for up to 5 s. */
async function waitFor(check: () => Promise<boolean>) {
  const deadline = Date.now() + 5_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('rate limiter, memory health and input checks', () => {
  test('memory backend is healthy; bad key ids and plans are refused', async () => {
    const limiter = createRateLimiter();
    try {
      assert.deepEqual(limiter.health(), { backend: 'memory', degraded: false });
      await assert.rejects(limiter.consume('', 'free'), TypeError);
      await assert.rejects(limiter.consume('k'.repeat(201), 'free'), TypeError);
      await assert.rejects(limiter.consume('k', 'gold' as 'free'), TypeError);
    } finally {
      await limiter.close();
    }
  });
});

/** A local TCP port with nothing listening on it. */
async function unusedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  assert.ok(address && typeof address === 'object');
  return address.port;
}
