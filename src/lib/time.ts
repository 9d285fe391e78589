/** The clock the service reads; tests inject their own. */
export type Clock = () => number;

export const systemClock: Clock = () => Date.now();

let lastMs = Number.NaN;
let lastIso = '';

/**
 * ISO 8601 UTC with milliseconds and `Z` (decisions §1). Every answer's `meta.timestamp` asks for
 * it, and under load many answers share a millisecond: the string of the last one is kept.
 */
export function isoNow(clock: Clock = systemClock): string {
  const ms = clock();
  if (ms !== lastMs) {
    lastIso = new Date(ms).toISOString();
    lastMs = ms;
  }
  return lastIso;
}
