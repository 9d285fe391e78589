/** An account's billing plan; it decides the rate limits of every key of the account (decisions §8). */
export type Plan = 'free' | 'pro' | 'enterprise';

/** Requests allowed per aligned wall-clock minute and per UTC day. */
export type PlanLimits = { readonly perMinute: number; readonly perDay: number };

/** Every plan, in upgrade order. */
export const PLANS: readonly Plan[] = Object.freeze(['free', 'pro', 'enterprise'] as const);

/** Limits per plan; `null` means unlimited (no counting, no rate-limit headers). */
export const PLAN_LIMITS: Readonly<Record<Plan, PlanLimits | null>> = Object.freeze({
  free: Object.freeze({ perMinute: 60, perDay: 10_000 }),
  pro: Object.freeze({ perMinute: 300, perDay: 100_000 }),
  enterprise: null,
});

/** True for a known plan name, e.g. when reading one from the database. */
export function isPlan(value: unknown): value is Plan {
  return typeof value === 'string' && (PLANS as readonly string[]).includes(value);
}

/** The two aligned windows every limited plan is counted in. */
export type WindowName = 'minute' | 'day';

/** Length of each window in seconds; minutes align to the wall clock, days to 00:00 UTC. */
export const WINDOW_SECONDS: Readonly<Record<WindowName, number>> = Object.freeze({
  minute: 60,
  day: 86_400,
});
