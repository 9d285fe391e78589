import v8 from 'node:v8';

/**
 * V8 lets the old generation grow up to 4 times what survived a full collection when its heap
 * limit is 2 GiB or more (Node's default on a machine with 8 GB or more); under smaller limits it
 * scales that down to 1.3-2 times by itself.
 */
const FULL_GROWTH_HEAP_LIMIT = 2 * 1024 * 1024 * 1024;

/**
 * Whether `setHeapGrowth(percent)` changes anything in a process started with `execArgv` whose heap
 * limit is `heapLimit` bytes: not for 0 (V8's own choice), not when node was started with its own
 * `--heap-growing-percent`, and not under a heap limit small enough that V8 already grows the heap
 * less (`--max-old-space-size`, or a machine with little memory).
 */
export function heapGrowthApplies(percent: number, execArgv: readonly string[], heapLimit: number): boolean {
  if (percent === 0) return false;
  if (execArgv.some((arg) => /^--heap[-_]growing[-_]percent(=|$)/.test(arg))) return false;
  return heapLimit >= FULL_GROWTH_HEAP_LIMIT;
}

/**
 * Sets how far V8 lets the JavaScript heap grow past what survived a full collection before it
 * runs the next one: `percent` of the survivors (50: to 1.5 times them), where heapGrowthApplies
 * says so. The server keeps about 30 MB alive (code, caches, prepared statements), and nearly all
 * of a request's allocations die young; but under load a few hundred bytes a request outlive two
 * young-generation collections and pile up in the old generation until the next full one, so
 * with V8's choice a busy process carried up to about 100 MB of garbage (docs/deployment.md,
 * "Memory").
 *
 * V8 reads the flag each time it sets the next limit, so setting it after start-up takes effect
 * from the next full collection on. The flag replaces V8's whole choice, its smaller factors for
 * an idle process (the memory reducer) and near the heap limit included.
 */
export function setHeapGrowth(percent: number): void {
  if (!Number.isInteger(percent) || percent < 0) {
    throw new RangeError(`heap growth must be a whole percentage of 0 or more, not ${percent}`);
  }
  if (!heapGrowthApplies(percent, process.execArgv, v8.getHeapStatistics().heap_size_limit)) return;
  v8.setFlagsFromString(`--heap-growing-percent=${percent}`);
}
