import assert from 'node:assert/strict';
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createInterface } from 'node:readline';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';

const REDIS_URL = process.env.ADS_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const REDIS_REQUIRED = process.env.CI === 'true' || process.env.ADS_TEST_REDIS_URL !== undefined;
const WORKER = fileURLToPath(new URL('./fixtures/consume-worker.ts', import.meta.url));
const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DEADLINE_MS = 20_000;

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
const skip = 'reason' in redis && !REDIS_REQUIRED ? `${redis.reason}; set ADS_TEST_REDIS_URL to run` : false;

type Worker = {
  child: ChildProcessWithoutNullStreams;
  lines: AsyncIterator<string>;
  stderr: string[];
  /** Its exit code; listened for from the start, since it may exit before the test waits for it. */
  exited: Promise<number | null>;
};

function startWorker(env: Record<string, string>): Worker {
  const child = spawn(process.execPath, ['--import', 'tsx', WORKER], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const stderr: string[] = [];
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => stderr.push(chunk));
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, lines, stderr, exited };
}

/** The worker's next stdout line, failing with its stderr if it ends or stalls first. */
async function nextLine(worker: Worker): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  const stalled = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`worker stalled: ${worker.stderr.join('')}`)), DEADLINE_MS);
  });
  try {
    const next = await Promise.race([worker.lines.next(), stalled]);
    if (next.done) throw new Error(`worker exited early: ${worker.stderr.join('')}`);
    return next.value;
  } finally {
    clearTimeout(timer);
  }
}

test('two processes on one Redis prefix share one budget: exactly 60 of 100 pass', { skip }, async () => {
  assert.ok('client' in redis, 'reason' in redis ? `${redis.reason}; check ADS_TEST_REDIS_URL` : '');
  const prefix = `ads-test:rl2p:${randomUUID()}`;
  const keyId = `key_${randomUUID()}`;
  const nowMs = Date.UTC(2030, 0, 15, 12, 30, 30);
  const env = { REDIS_URL, KEY_PREFIX: prefix, KEY_ID: keyId, COUNT: '50', NOW_MS: String(nowMs) };
  const workers = [startWorker(env), startWorker(env)];
  try {
    // Both connected before either starts, so the 100 consumes really race each other.
    assert.deepEqual(await Promise.all(workers.map(nextLine)), ['ready', 'ready']);
    for (const w of workers) w.child.stdin.end('go\n');
    const results = (await Promise.all(workers.map(nextLine))).map(
      (line) => JSON.parse(line) as { passed: number; limited: number; degraded: boolean },
    );
    assert.deepEqual(await Promise.all(workers.map((w) => w.exited)), [0, 0]);
    assert.ok(results.every((r) => r.degraded === false && r.passed + r.limited === 50));
    assert.equal(results[0]!.passed + results[1]!.passed, 60);
    assert.equal(await redis.client.get(`${prefix}:${keyId}:m:${Math.floor(nowMs / 60_000)}`), '100');
    assert.equal(await redis.client.get(`${prefix}:${keyId}:d:${Math.floor(nowMs / 86_400_000)}`), '60');
  } finally {
    for (const w of workers) if (w.child.exitCode === null) w.child.kill();
    const keys = await redis.client.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.client.del(...keys);
    await redis.client.quit();
  }
});
