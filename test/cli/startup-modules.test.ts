import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { createTestDatabase, postgresSkipReason } from '../helpers/databases.ts';
import { runAds, startServe } from '../helpers/process.ts';

const PRELOAD = path.resolve(import.meta.dirname, '../helpers/report-loaded-modules.cjs');
const redisUrl = process.env.ADS_TEST_REDIS_URL;

const dirs: string[] = [];
after(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});
const tempDir = () => {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'ads-startup-'));
  dirs.push(d);
  return d;
};

/** Starts `ads serve` with the given settings, stops it, and returns the packages it loaded. */
async function packagesLoadedByServe(env: Record<string, string>): Promise<Set<string>> {
  const report = path.join(tempDir(), 'loaded.json');
  const server = await startServe({
    ...env,
    ADS_TEST_LOADED_MODULES: report,
    NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --require ${PRELOAD}`.trim(),
  });
  const res = await server.fetch('GET', '/readyz');
  assert.equal(res.status, 200);
  assert.equal(await server.stop(), 0);
  const files = JSON.parse(fs.readFileSync(report, 'utf8')) as string[];
  const names = new Set<string>();
  for (const file of files) {
    const m = /[\\/]node_modules[\\/]((?:@[^\\/]+[\\/])?[^\\/]+)[\\/]/.exec(file);
    if (m?.[1]) names.add(m[1].replace(/\\/g, '/'));
  }
  return names;
}

/**
 * Start-up loads only what the configuration uses (docs/benchmarks.md, "Notes: start-up"): the
 * PostgreSQL driver, the Redis client and the certificate generator cost 60-130 ms of every start.
 */
describe('ads serve start-up loads optional packages only when used', () => {
  // From the sources (ADS_NO_BUNDLE=1), where every package is loaded through Node's loaders; the
  // start-up bundle holds the packages it does load, so only those left out of it are visible there.
  it('on SQLite with its certificate on disk: no pg, no ioredis, no selfsigned', async () => {
    const dataDir = tempDir();
    const first = await packagesLoadedByServe({ ADS_DATA_DIR: dataDir, ADS_NO_BUNDLE: '1' });
    // The first start writes the development certificate, so it needs the generator.
    assert.ok(first.has('selfsigned'), `first start loaded: ${[...first].join(', ')}`);
    assert.ok(fs.existsSync(path.join(dataDir, 'tls/cert.pem')));
    const again = await packagesLoadedByServe({ ADS_DATA_DIR: dataDir, ADS_NO_BUNDLE: '1' });
    // The report sees packages that ES modules import too (Node loads CommonJS ones through require).
    assert.ok(again.has('fastify'), `loaded: ${[...again].join(', ')}`);
    for (const name of ['pg', 'ioredis', 'selfsigned']) {
      assert.ok(!again.has(name), `${name} loaded: ${[...again].join(', ')}`);
    }
  });

  const skip =
    postgresSkipReason() ||
    (redisUrl ? false : 'needs ADS_TEST_REDIS_URL for the shared rate-limit counters');
  // As `npm start` runs it (the start-up bundle when it is fresh): the drivers are not in the bundle
  // but loaded from node_modules when the configuration names their service.
  it('on PostgreSQL with Redis: loads pg and ioredis, and serves', { skip }, async () => {
    const db = await createTestDatabase('postgres');
    try {
      if (db.config.dialect !== 'postgres') throw new Error('unreachable');
      const env = {
        ADS_DATABASE_URL: db.config.url,
        ADS_REDIS_URL: redisUrl ?? '',
        ADS_SECRET_KEY: randomBytes(32).toString('base64'),
        ADS_DATA_DIR: tempDir(),
      };
      const migrated = runAds(['migrate'], env);
      assert.equal(migrated.code, 0, migrated.stderr);
      const loaded = await packagesLoadedByServe(env);
      assert.ok(loaded.has('pg'), `loaded: ${[...loaded].join(', ')}`);
      assert.ok(loaded.has('ioredis'), `loaded: ${[...loaded].join(', ')}`);
    } finally {
      await db.drop();
    }
  });
});
