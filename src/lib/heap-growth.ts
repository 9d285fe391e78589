import v8 from 'node:v8';

/**
 * Sets how far V8 lets the JavaScript heap grow past what survived a full collection before it
 * runs the next one: `percent` of the survivors (50: to 1.5 times them). 0 leaves V8's own
 * choice, which on a machine with gigabytes of memory and a cheap collection is up to 4 times the
 * survivors. The server keeps about 30 MB alive (code, caches, prepared statements), and nearly
 * all of a request's allocations die young; but under load a few hundred KB outlive each
 * young-generation collection and pile up in the old generation until that limit, so with V8's
 * choice a busy process carried up to about 100 MB of garbage (docs/deployment.md, "Memory").
 *
 * V8 reads the flag each time it sets the next limit, so setting it after start-up takes effect
 * from the next full collection on.
 */
export function setHeapGrowth(percent: number): void {
  if (!Number.isInteger(percent) || percent < 0) {
    throw new RangeError(`heap growth must be a whole percentage of 0 or more, not ${percent}`);
  }
  v8.setFlagsFromString(`--heap-growing-percent=${percent}`);
}
