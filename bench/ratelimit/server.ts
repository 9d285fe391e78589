/**
 * Child process of bench/ratelimit/run.ts: one HTTPS server over a fresh database (SQLite, or the
 * PostgreSQL database BENCH_DATABASE_URL names) with an enterprise key (no counters) and a pro key
 * (both windows counted), 20 objects each. Counters in memory, or in Redis when BENCH_REDIS_URL is
 * set. The limiter's clock runs CLOCK_FACTOR times as fast as real time so the pro key is counted
 * but never refused; it is computed from the real clock on every reading, so unlike a timer that
 * adds a minute per tick it cannot fall behind when the process is busy.
 *
 * IPC: sends { url, keys } once listening; answers 'cpu' with process.cpuUsage(), 'profile-start' and
 * 'profile-stop' with the share of sampled CPU spent in the limiter's code; exits on 'close'.
 */
import fs from 'node:fs';
import { Session } from 'node:inspector/promises';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import { migrate, openDatabase } from '../../src/db/database.ts';
import { loadTls } from '../../src/lib/tls.ts';
import { createAccount } from '../../src/modules/accounts/service.ts';
import { createRateLimiter } from '../../src/ratelimit/limiter.ts';
import { dropRedisPrefix } from './micro.ts';

const send = (msg: unknown) => process.send?.(msg);
const redisUrl = process.env.BENCH_REDIS_URL || undefined;
const databaseUrl = process.env.BENCH_DATABASE_URL || undefined;
const redisPrefix = `ads:bench:${process.pid}:${Date.now()}`;

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ads-bench-rl-'));
const config = loadConfig({
  ADS_DATA_DIR: dataDir,
  ADS_LOG_LEVEL: 'silent',
  ADS_PORT: '0',
  ...(databaseUrl ? { ADS_DATABASE_URL: databaseUrl } : {}),
});
const database = openDatabase(config.database);
await migrate(database);
/**
 * A limiter minute every 2.5 ms and a day every 3.6 s of real time. The pro plan allows 300 a
 * minute and 100,000 a day per key, so one key is refused only above 300 / 2.5 ms = 120,000 req/s
 * or 100,000 / 3.6 s ≈ 27,800 req/s sustained (the day is the tighter; a timer adding a minute
 * every 50 ms, as before, both fell behind under load and allowed only ~1,400 req/s over its 72 s
 * day). The HTTP harness has seen at most ~17,000 req/s on one route on a fast machine. Any 429 is
 * still reported (run.ts), never counted as throughput.
 */
const CLOCK_FACTOR = 24_000;
const clockStart = Date.now();
const logger = pino({ level: 'silent' });
const rateLimiter = createRateLimiter({
  redis: redisUrl ? { url: redisUrl, keyPrefix: redisPrefix } : undefined,
  now: () => clockStart + (Date.now() - clockStart) * CLOCK_FACTOR,
  logger: { ...logger, error: (o: object, m: string) => console.error(m, o), warn: () => {}, info: () => {} },
});
const tls = await loadTls(config);
const app = await buildApp({ config, database, clock: Date.now, logger, rateLimiter }, { https: tls });
await app.listen({ host: '127.0.0.1', port: 0 });
const port = (app.server.address() as { port: number }).port;
const enterprise = await createAccount(database, { name: 'E', adminEmail: 'e@x.test', plan: 'enterprise' });
const pro = await createAccount(database, { name: 'P', adminEmail: 'p@x.test', plan: 'pro' });
for (const key of [enterprise.api_key.key, pro.api_key.key]) {
  for (let i = 0; i < 20; i++) {
    await app.inject({
      method: 'POST',
      url: '/v1/data',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      payload: JSON.stringify({ title: `Object ${i}`, type: 'note', content: 'x'.repeat(200) }),
    });
  }
}
// Warms the limiter's connection: a consume before Redis is ready would count on the fallback.
await rateLimiter.usage('bench-warm-up', 'pro');
if (rateLimiter.health().degraded) throw new Error(`limiter degraded: ${rateLimiter.health().detail}`);

// Frames that exist only because of rate limiting: our code, the hook, the Redis client and parser.
const LIMITER_CODE =
  /\/src\/ratelimit\/|\/src\/http\/rate-limit\.ts|\/node_modules\/(ioredis|redis-parser|denque)\//;
type Profile = {
  nodes: { id: number; callFrame: { functionName: string; url: string }; children?: number[] }[];
  samples: number[];
  timeDeltas: number[];
};

/** Share of non-idle samples with a limiter frame anywhere on the stack. */
function limiterShare(profile: Profile): number {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const hit = new Map<number, boolean>();
  const inLimiter = (id: number): boolean => {
    const known = hit.get(id);
    if (known !== undefined) return known;
    const up = parent.get(id);
    const result =
      LIMITER_CODE.test(byId.get(id)?.callFrame.url ?? '') || (up !== undefined && inLimiter(up));
    hit.set(id, result);
    return result;
  };
  let busy = 0;
  let limiter = 0;
  profile.samples.forEach((id, i) => {
    if (byId.get(id)?.callFrame.functionName === '(idle)') return;
    const dt = profile.timeDeltas[i] ?? 0;
    busy += dt;
    if (inLimiter(id)) limiter += dt;
  });
  return busy === 0 ? 0 : limiter / busy;
}

const inspector = new Session();
inspector.connect();

process.on('message', async (msg) => {
  if (msg === 'cpu') send({ cpu: process.cpuUsage(), degraded: rateLimiter.health().degraded });
  if (msg === 'profile-start') {
    await inspector.post('Profiler.enable');
    await inspector.post('Profiler.start');
    send({ started: true });
  }
  if (msg === 'profile-stop') {
    const { profile } = (await inspector.post('Profiler.stop')) as { profile: Profile };
    send({ share: limiterShare(profile) });
  }
  if (msg === 'close') {
    await app.close();
    await database.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
    if (redisUrl) await dropRedisPrefix(redisUrl, redisPrefix);
    process.exit(0);
  }
});
send({
  url: `https://127.0.0.1:${port}/v1/data`,
  keys: { enterprise: enterprise.api_key.key, pro: pro.api_key.key },
});
