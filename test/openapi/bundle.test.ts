import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { createHarness } from '../helpers/harness.ts';
import { startServe } from '../helpers/process.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const BUNDLE = path.join(ROOT, 'node_modules/.cache/ads/ads.mjs');

/**
 * `npm start` runs the start-up bundle (bin/bundle.mjs), in which @fastify/swagger is bundled: the
 * document must come out of it as it comes out of the sources, which every other OpenAPI suite runs.
 */
describe('the start-up bundle serves the OpenAPI document of the sources', () => {
  const h = createHarness('sqlite');
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ads-bundle-doc-'));
  after(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  it('is the same document, apart from the address of the instance', async () => {
    // Built now, so the bundle holds the sources as they are (bin/bundle.mjs replaces it atomically).
    const built = spawnSync(process.execPath, [path.join(ROOT, 'bin/bundle.mjs')], { encoding: 'utf8' });
    assert.ok(fs.existsSync(path.join(ROOT, 'node_modules/.cache/ads/manifest.json')), built.stderr);

    const serve = await startServe({ ADS_DATA_DIR: dataDir }, { entry: BUNDLE });
    let served: Record<string, unknown>;
    try {
      const res = await serve.fetch('GET', '/v1/openapi.json');
      assert.equal(res.status, 200);
      served = res.body;
    } finally {
      assert.equal(await serve.stop(), 0);
    }

    await h.setup();
    let fromSources: Record<string, unknown>;
    try {
      const res = await h.request('GET', '/v1/openapi.json');
      assert.equal(res.status, 200);
      fromSources = res.body;
    } finally {
      await h.teardown();
    }

    // The one difference allowed: each names the instance that served it.
    assert.equal((served.servers as Array<{ url: string }>)[0]?.url, serve.url);
    // Text, not structure: key order and every string must match, as a client generator would read it.
    const text = (doc: Record<string, unknown>) => JSON.stringify({ ...doc, servers: [] });
    const operations = Object.values(served.paths as Record<string, object>).flatMap((item) =>
      Object.keys(item),
    );
    assert.ok(operations.length >= 25, `the bundle's document lists ${operations.length} operations`);
    const [a, b] = [text(served), text(fromSources)];
    let i = 0;
    while (i < a.length && a[i] === b[i]) i++;
    const around = (t: string) => t.slice(Math.max(0, i - 80), i + 80);
    // The documents run to ~200 KB: name where they part rather than print both.
    assert.ok(a === b, `they differ at character ${i}: bundle …${around(a)}…, sources …${around(b)}…`);
  });
});
