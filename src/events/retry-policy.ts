/** When the next automatic attempt happens, and how many retries of the schedule that spends. */
export interface RetryStep {
  delayMs: number;
  retriesUsed: number;
}

const MAX_JITTER = 0.1;

/**
 * The next retry after a failed attempt, or null when the schedule (seconds between attempts) is
 * spent: every failure spends one retry, so a delivery always gets all of them (decisions §7: it
 * fails when the last retry fails). The scheduled wait gets up to 10% jitter so a burst of failures
 * does not retry in lockstep. A receiver's Retry-After may lengthen a wait, within the schedule: up
 * to its longest step.
 */
export function nextRetry(
  schedule: readonly number[],
  retriesUsed: number,
  retryAfterMs?: number,
  random: () => number = Math.random,
): RetryStep | null {
  if (retriesUsed >= schedule.length) return null;
  const scheduledMs = (schedule[retriesUsed] ?? 0) * 1000;
  const jittered = scheduledMs * (1 + MAX_JITTER * Math.min(Math.max(random(), 0), 1));
  const longestMs = Math.max(...schedule) * 1000;
  const delayMs =
    retryAfterMs === undefined ? jittered : Math.max(jittered, Math.min(retryAfterMs, longestMs));
  return { delayMs: Math.round(delayMs), retriesUsed: retriesUsed + 1 };
}

const MAX_RETRY_AFTER_SECONDS = 10 * 365 * 24 * 3600;

/** A Retry-After header (delta-seconds or HTTP-date) in milliseconds from `nowMs`; undefined if absent or malformed. */
export function parseRetryAfter(value: string | string[] | undefined, nowMs: number): number | undefined {
  const raw = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!raw) return undefined;
  if (/^\d{1,12}$/.test(raw)) return Math.min(Number(raw), MAX_RETRY_AFTER_SECONDS) * 1000;
  const at = Date.parse(raw);
  if (Number.isNaN(at) || !/[a-z]/i.test(raw)) return undefined;
  return Math.max(0, at - nowMs);
}
