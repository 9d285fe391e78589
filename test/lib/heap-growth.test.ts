import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import { ConfigError, HEAP_GROWTH_PERCENT, loadConfig } from '../../src/config.ts';
import { setHeapGrowth } from '../../src/lib/heap-growth.ts';

const BIN = path.resolve(import.meta.dirname, '../../bin/ads.js');
const MODULE = pathToFileURL(path.resolve(import.meta.dirname, '../../src/lib/heap-growth.ts')).href;

/**
 * A process that keeps about 30 MB alive and churns objects that live long enough to reach the old
 * generation before they die (a ring of 100,000), sampling the heap's use as it goes: its peak
 * over what is alive at the end shows how far the old generation was let grow.
 */
const CHURN = `
import v8 from 'node:v8';
import { setHeapGrowth } from ${JSON.stringify(MODULE)};
setHeapGrowth(Number(process.argv[1]));
const live = [];
for (let i = 0; i < 150_000; i++) live.push({ i, s: 'x'.repeat(100) + i });
const ring = new Array(100_000);
let peak = 0;
for (let i = 0; i < 2_000_000; i++) {
  ring[i % ring.length] = { i, s: 'y'.repeat(200) + i };
  if (i % 5_000 === 0) peak = Math.max(peak, v8.getHeapStatistics().used_heap_size);
}
globalThis.gc();
const alive = v8.getHeapStatistics().used_heap_size;
console.log(JSON.stringify({ peak, alive, kept: live.length + ring.length }));
`;

function churn(percent: number): { peak: number; alive: number } {
  const res = spawnSync(
    process.execPath,
    ['--expose-gc', '--import', 'tsx', '--input-type=module', '-e', CHURN, String(percent)],
    { encoding: 'utf8', timeout: 60_000 },
  );
  assert.equal(res.status, 0, res.stderr);
  return JSON.parse(res.stdout.trim().split('\n').pop()!);
}

describe('heap growth (ADS_HEAP_GROWTH_PERCENT)', () => {
  it('keeps the heap within a small multiple of what survives (V8 alone lets it reach 4×)', () => {
    const { peak, alive } = churn(50);
    // The old generation is collected at 1.5 × its survivors; the young generation in use and what
    // the program allocates while a collection marks come on top (about 1.8× in all on Node 20,
    // against about 4.4× with 0, V8's own choice, and 2.4× with 100).
    const mb = (n: number) => `${(n / 1048576).toFixed(0)} MB`;
    assert.ok(peak < alive * 2.2, `peak ${mb(peak)} with ${mb(alive)} alive`);
  });

  it('is set by the ads command, from the setting, before the command runs', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ads-heap-'));
    try {
      // Records each V8 flag the process sets, and prints them as it exits.
      const probe =
        "import v8 from 'node:v8'; const set = v8.setFlagsFromString; const seen = [];" +
        'v8.setFlagsFromString = (f) => { seen.push(f); set(f); };' +
        "process.on('exit', () => process.stderr.write('flags ' + JSON.stringify(seen) + '\\n'));";
      const run = (env: Record<string, string>) => {
        const res = spawnSync(
          process.execPath,
          ['--import', `data:text/javascript,${encodeURIComponent(probe)}`, BIN, 'migrate'],
          { env: { ...process.env, ADS_DATA_DIR: dir, ADS_LOG_LEVEL: 'warn', ...env }, encoding: 'utf8' },
        );
        assert.equal(res.status, 0, res.stderr);
        return JSON.parse(/^flags (.*)$/m.exec(res.stderr)![1]!) as string[];
      };
      assert.deepEqual(run({}), ['--heap-growing-percent=50']);
      assert.deepEqual(run({ ADS_HEAP_GROWTH_PERCENT: '0' }), ['--heap-growing-percent=0']);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('defaults to 50 %, follows the setting, 0 meaning V8’s own choice', () => {
    assert.equal(HEAP_GROWTH_PERCENT, 50);
    assert.equal(loadConfig({}).heapGrowthPercent, 50);
    assert.equal(loadConfig({ ADS_HEAP_GROWTH_PERCENT: '0' }).heapGrowthPercent, 0);
    assert.equal(loadConfig({ ADS_HEAP_GROWTH_PERCENT: '200' }).heapGrowthPercent, 200);
  });

  it('rejects a setting that is not a whole percentage, naming it', () => {
    for (const bad of ['-1', '1.5', 'lots', '12345']) {
      assert.throws(
        () => loadConfig({ ADS_HEAP_GROWTH_PERCENT: bad }),
        (err: unknown) => err instanceof ConfigError && err.message.includes('ADS_HEAP_GROWTH_PERCENT'),
        bad,
      );
    }
    assert.throws(() => setHeapGrowth(-1), RangeError);
    assert.throws(() => setHeapGrowth(1.5), RangeError);
  });
});
