/** The clock the service reads; tests inject their own. */
export type Clock = () => number;

export const systemClock: Clock = () => Date.now();

/** ISO 8601 UTC with milliseconds and `Z` (decisions §1). */
export function isoNow(clock: Clock = systemClock): string {
  return new Date(clock()).toISOString();
}
