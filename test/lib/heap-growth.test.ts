import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import { ConfigError, HEAP_GROWTH_PERCENT, loadConfig } from '../../src/config.ts';
import { heapGrowthApplies, setHeapGrowth } from '../../src/lib/heap-growth.ts';
import { runAds, startServe } from '../helpers/process.ts';

const MODULE = pathToFileURL(path.resolve(import.meta.dirname, '../../src/lib/heap-growth.ts')).href;
const GiB = 1024 * 1024 * 1024;
/**
 * The heap limit of a machine with 16 GB of memory, under which V8 grows the heap up to 4 times and
 * the setting applies, whatever memory the machine running the tests has.
 */
const BIG_HEAP = ['--max-old-space-size=4096'];

/**
 * A process that keeps about 30 MB alive and churns objects that live long enough to reach the old
 * generation before they die (a ring of 100,000), sampling the heap's use as it goes: its peak
 * shows how far the old generation was let grow. One GC thread, so that how far the program gets
 * while a collection marks does not depend on how busy the machine's other core is.
 */
const CHURN = `
import v8 from 'node:v8';
import { setHeapGrowth } from ${JSON.stringify(MODULE)};
setHeapGrowth(Number(process.argv[1]));
const live = [];
for (let i = 0; i < 150_000; i++) live.push({ i, s: 'x'.repeat(100) + i });
const ring = new Array(100_000);
let peak = 0;
for (let i = 0; i < 1_000_000; i++) {
  ring[i % ring.length] = { i, s: 'y'.repeat(200) + i };
  if (i % 5_000 === 0) peak = Math.max(peak, v8.getHeapStatistics().used_heap_size);
}
console.log(JSON.stringify({ peak, kept: live.length + ring.length }));
`;

function churnPeak(percent: number): number {
  const res = spawnSync(
    process.execPath,
    [
      ...BIG_HEAP,
      '--single-threaded-gc',
      '--import',
      'tsx',
      '--input-type=module',
      '-e',
      CHURN,
      String(percent),
    ],
    { encoding: 'utf8', timeout: 60_000 },
  );
  assert.equal(res.status, 0, res.stderr);
  return (JSON.parse(res.stdout.trim().split('\n').pop()!) as { peak: number }).peak;
}

/** A module for NODE_OPTIONS=--import that prints each V8 flag the process sets, as it sets it. */
function flagProbe(dir: string): string {
  const file = path.join(dir, 'flag-probe.mjs');
  fs.writeFileSync(
    file,
    "import v8 from 'node:v8';\nconst set = v8.setFlagsFromString;\n" +
      "v8.setFlagsFromString = (flag) => { process.stderr.write('v8 flag ' + flag + '\\n'); set(flag); };\n",
  );
  return `--import=${pathToFileURL(file).href}`;
}
const flagsSet = (stderr: string) => [...stderr.matchAll(/^v8 flag (\S+)$/gm)].map((m) => m[1]);

describe('heap growth (ADS_HEAP_GROWTH_PERCENT)', () => {
  it('keeps the heap well below what V8 alone lets it reach', () => {
    const own = churnPeak(0);
    const limited = churnPeak(50);
    // About 146 against 350 MB on Node 20 (85 against 165 MB on a slower machine, 2026-12-02, the
    // same with 700,000 to 2,000,000 objects churned): the old generation is collected at 1.5
    // times its survivors instead of up to 4 times.
    const mb = (n: number) => `${(n / 1048576).toFixed(0)} MB`;
    assert.ok(limited < own * 0.6, `peak ${mb(limited)} with 50 %, ${mb(own)} with V8's choice`);
  });

  it('is set by ads serve, worker, migrate and reindex before they work, and not by ads backup', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ads-heap-'));
    try {
      const env = {
        ADS_DATA_DIR: dir,
        ADS_HEAP_GROWTH_PERCENT: '',
        NODE_OPTIONS: [...BIG_HEAP, flagProbe(dir)].join(' '),
      };
      const serve = await startServe(env);
      assert.equal(await serve.stop(), 0);
      assert.deepEqual(flagsSet(serve.stderr()), ['--heap-growing-percent=50']);

      const worker = await startServe({ ...env, ADS_HEAP_GROWTH_PERCENT: '120' }, { command: 'worker' });
      assert.equal(await worker.stop(), 0);
      assert.deepEqual(flagsSet(worker.stderr()), ['--heap-growing-percent=120']);

      // The commands that rewrite search entries in batches set it too (a reindex of 50,000
      // objects peaked at 230 MB with it, 290-305 MB without); a backup, which copies pages, not.
      const migrate = runAds(['migrate'], { ...env, ADS_HEAP_GROWTH_PERCENT: '60' });
      assert.equal(migrate.code, 0, migrate.stderr);
      assert.deepEqual(flagsSet(migrate.stderr), ['--heap-growing-percent=60']);
      const reindex = runAds(['reindex'], env);
      assert.equal(reindex.code, 0, reindex.stderr);
      assert.deepEqual(flagsSet(reindex.stderr), ['--heap-growing-percent=50']);
      const copy = fs.mkdtempSync(path.join(os.tmpdir(), 'ads-heap-copy-'));
      try {
        const backup = runAds(['backup', path.join(copy, 'backup')], env);
        assert.equal(backup.code, 0, backup.stderr);
        assert.deepEqual(flagsSet(backup.stderr), []);
      } finally {
        fs.rmSync(copy, { recursive: true, force: true });
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('leaves V8 its own choice for 0, beside node’s own flag, and under a small heap limit', () => {
    assert.equal(heapGrowthApplies(50, [], 4 * GiB), true);
    assert.equal(heapGrowthApplies(50, ['--enable-source-maps'], 2 * GiB), true);
    assert.equal(heapGrowthApplies(0, [], 4 * GiB), false);
    assert.equal(heapGrowthApplies(50, ['--heap-growing-percent=30'], 4 * GiB), false);
    assert.equal(heapGrowthApplies(50, ['--heap_growing_percent', '30'], 4 * GiB), false);
    // --max-old-space-size=512: V8 already grows such a heap by at most about 1.4 times.
    assert.equal(heapGrowthApplies(50, ['--max-old-space-size=512'], 0.55 * GiB), false);
  });

  it('defaults to 50 %, follows the setting, 0 meaning V8’s own choice', () => {
    assert.equal(HEAP_GROWTH_PERCENT, 50);
    assert.equal(loadConfig({}).heapGrowthPercent, 50);
    assert.equal(loadConfig({ ADS_HEAP_GROWTH_PERCENT: '0' }).heapGrowthPercent, 0);
    assert.equal(loadConfig({ ADS_HEAP_GROWTH_PERCENT: '10' }).heapGrowthPercent, 10);
    assert.equal(loadConfig({ ADS_HEAP_GROWTH_PERCENT: '300' }).heapGrowthPercent, 300);
  });

  it('rejects a setting that is not 0 or a whole percentage from 10 to 300, naming it', () => {
    for (const bad of ['-1', '1.5', 'lots', '5', '301', '5000', '12345']) {
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
