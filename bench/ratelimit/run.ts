/**
 * What rate limiting costs a request: the same server, the same route (`GET /v1/data`), driven by
 * autocannon over HTTPS on loopback, once with an enterprise key (no counters) and once with a pro
 * key (minute and day counters consumed on every request), in memory and, with ADS_REDIS_URL, in
 * Redis. The limiter's clock moves one minute every 50 ms so the pro key is counted but never
 * refused: the figures compare the work, not 429 answers.
 *
 *   node --import tsx bench/ratelimit/run.ts [--seconds 5] [--write]
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import pino from 'pino';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import { migrate, openDatabase } from '../../src/db/database.ts';
import { loadTls } from '../../src/lib/tls.ts';
import { createAccount } from '../../src/modules/accounts/service.ts';
import { createRateLimiter } from '../../src/ratelimit/limiter.ts';
import { writeBenchSection } from '../report.ts';

const { values } = parseArgs({
  options: { seconds: { type: 'string', default: '5' }, write: { type: 'boolean', default: false } },
});
const seconds = Number(values.seconds);

async function serve(redisUrl?: string) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ads-bench-rl-'));
  const config = loadConfig({ ADS_DATA_DIR: dataDir, ADS_LOG_LEVEL: 'silent', ADS_PORT: '0' });
  const database = openDatabase(config.database);
  await migrate(database);
  let shift = 0;
  const timer = setInterval(() => {
    shift += 60_000;
  }, 50);
  const clock = () => Date.now() + shift;
  const logger = pino({ level: 'silent' });
  const rateLimiter = createRateLimiter({
    redis: redisUrl ? { url: redisUrl, keyPrefix: `ads:bench:${Date.now()}` } : undefined,
    now: clock,
    logger,
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
  return {
    url: `https://127.0.0.1:${port}/v1/data`,
    keys: { enterprise: enterprise.api_key.key, pro: pro.api_key.key },
    close: async () => {
      clearInterval(timer);
      await app.close();
      await database.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

async function drive(url: string, key: string) {
  const result = await autocannon({
    url,
    connections: 10,
    duration: seconds,
    headers: { authorization: `Bearer ${key}` },
    // Self-signed development certificate of this bench's own server.
    tlsOptions: { rejectUnauthorized: false },
  } as autocannon.Options);
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.non2xx,
  };
}

const rows: string[] = [];
for (const backend of ['memory', ...(process.env.ADS_REDIS_URL ? ['redis'] : [])]) {
  const server = await serve(backend === 'redis' ? process.env.ADS_REDIS_URL : undefined);
  await drive(server.url, server.keys.enterprise); // warm-up
  const off = await drive(server.url, server.keys.enterprise);
  const on = await drive(server.url, server.keys.pro);
  await server.close();
  const ratio = (on.rps / off.rps).toFixed(2);
  rows.push(
    `| ${backend} | no limits (enterprise) | ${off.rps.toFixed(0)} | ${off.p50} | ${off.p99} | ${off.errors} | 1.00 |`,
    `| ${backend} | limits counted (pro) | ${on.rps.toFixed(0)} | ${on.p50} | ${on.p99} | ${on.errors} | ${ratio} |`,
  );
}

const table = [
  `Measured ${new Date().toISOString().slice(0, 10)} on ${os.cpus().length} cores (${os.cpus()[0]?.model ?? 'unknown CPU'}), client and server sharing the machine; ${seconds} s per row, 10 connections, \`GET /v1/data\` (20 items) over HTTPS, SQLite.`,
  '',
  '| counters | key | req/s | p50 ms | p99 ms | errors | ratio |',
  '|---|---|---|---|---|---|---|',
  ...rows,
].join('\n');
process.stdout.write(`${table}\n`);
if (values.write) writeBenchSection('Rate limiting', table);
