/** The clock the service reads; tests inject their own. */
export type Clock = () => number;

export const systemClock: Clock = () => Date.now();

let secondMs = Number.NaN;
let secondPrefix = '';

/**
 * `new Date(ms).toISOString()`, for the same values and errors, written faster. V8 formats every
 * field through its printf: about 7,000 instructions a call, and each request made two (its
 * `meta.timestamp` and its log line), about 5 % of a `GET /data/{id}` (docs/benchmarks.md). The
 * text up to the seconds is kept for the last second asked for; only the milliseconds are
 * written on each call.
 */
export function isoString(ms: number): string {
  const t = Math.trunc(ms);
  // Past Date's last instant, its second still is one; NaN and the rest throw below.
  if (t > 8.64e15) throw new RangeError('Invalid time value');
  const m = ((t % 1000) + 1000) % 1000;
  const second = t - m;
  if (second !== secondMs) {
    // Throws RangeError for NaN and for instants out of Date's range, as toISOString does.
    secondPrefix = new Date(second).toISOString().slice(0, -4);
    secondMs = second;
  }
  return `${secondPrefix}${m < 10 ? '00' : m < 100 ? '0' : ''}${m}Z`;
}

/** ISO 8601 UTC with milliseconds and `Z` (decisions §1): every answer's `meta.timestamp`. */
export function isoNow(clock: Clock = systemClock): string {
  return isoString(clock());
}

/**
 * Now, or one millisecond after `previous` when the clock has not passed it: the time of a change to
 * a record last changed at `previous` (an ISO string as {@link isoNow} writes). Read under the
 * record's lock, it makes the timestamps of one object's (or member's) events strictly increase,
 * even for two changes in one millisecond or from servers whose clocks differ a little, so that a
 * webhook receiver can order them by `timestamp` as docs/webhooks.md tells it to.
 */
export function isoAfter(clock: Clock, previous: string | null | undefined): string {
  const now = clock();
  if (!previous) return isoString(now);
  const last = Date.parse(previous);
  return isoString(now > last ? now : last + 1);
}
