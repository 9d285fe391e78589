/**
 * The limiter path alone, without HTTP: what `src/http/rate-limit.ts` does per request (consume both
 * windows, build the headers), in CPU microseconds of this process per request, for the pro key
 * (counted) against the enterprise key (not counted). 10 concurrent callers, like the HTTP bench's
 * 10 connections. CPU time per call is little affected by other load on the machine, so this is the
 * steady figure behind the HTTP ratios.
 */
import { Redis } from 'ioredis';
import { rateLimitHeaders } from '../../src/ratelimit/headers.ts';
import { createRateLimiter, type RateLimiter } from '../../src/ratelimit/limiter.ts';
import type { Plan } from '../../src/ratelimit/plans.ts';

/** Deletes the counters a bench run left under its Redis key prefix. */
export async function dropRedisPrefix(url: string, prefix: string) {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await client.connect();
    let cursor = '0';
    do {
      const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      if (keys.length > 0) await client.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    client.disconnect();
  }
}

export type MicroResult = { backend: string; offUs: number; onUs: number; onWallUs: number };

export const CALLERS = 10;

async function run(limiter: RateLimiter, plan: Plan, calls: number, sink: { n: number }) {
  const started = process.cpuUsage();
  const t0 = performance.now();
  let left = calls;
  const caller = async (i: number) => {
    const keyId = `key_bench_${i}`;
    while (left-- > 0) sink.n += Object.keys(rateLimitHeaders(await limiter.consume(keyId, plan))).length;
  };
  await Promise.all(Array.from({ length: CALLERS }, (_, i) => caller(i)));
  const cpu = process.cpuUsage(started);
  return { cpuUs: (cpu.user + cpu.system) / calls, wallUs: ((performance.now() - t0) * 1000) / calls };
}

/** Median over `rounds` of (pro, enterprise) pairs; each pair alternates its order. */
export async function microBench(opts: {
  backend: 'memory' | 'redis';
  redisUrl?: string;
  calls: number;
  rounds: number;
}): Promise<MicroResult> {
  let shift = 0;
  // A new minute every 250 calls: counted, never refused (pro allows 300).
  let ticks = 0;
  const prefix = `ads:bench-micro:${process.pid}:${Date.now()}`;
  const limiter = createRateLimiter({
    redis: opts.redisUrl ? { url: opts.redisUrl, keyPrefix: prefix } : undefined,
    now: () => {
      if (++ticks % 250 === 0) shift += 60_000;
      return Date.now() + shift;
    },
    logger: { info: () => {}, warn: () => {}, error: (o, m) => console.error(m, o) },
  });
  const sink = { n: 0 };
  try {
    await limiter.usage('key_bench_warm', 'pro');
    await run(limiter, 'pro', opts.calls, sink);
    await run(limiter, 'enterprise', opts.calls, sink);
    const off: number[] = [];
    const on: number[] = [];
    const onWall: number[] = [];
    for (let r = 0; r < opts.rounds; r++) {
      const order: Plan[] = r % 2 === 0 ? ['enterprise', 'pro'] : ['pro', 'enterprise'];
      for (const plan of order) {
        const res = await run(limiter, plan, opts.calls, sink);
        if (plan === 'pro') {
          on.push(res.cpuUs);
          onWall.push(res.wallUs);
        } else off.push(res.cpuUs);
      }
    }
    if (limiter.health().degraded) throw new Error(`limiter degraded: ${limiter.health().detail}`);
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
    return { backend: opts.backend, offUs: median(off), onUs: median(on), onWallUs: median(onWall) };
  } finally {
    await limiter.close();
    if (opts.redisUrl) await dropRedisPrefix(opts.redisUrl, prefix);
  }
}
