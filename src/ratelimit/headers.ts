import type { RateDecision } from './limiter.ts';
import { WINDOW_SECONDS } from './plans.ts';

/**
 * Response headers for one rate-limit decision (decisions §8); empty for unlimited keys.
 *
 * `X-RateLimit-*` describe the minute window only, as de facto clients expect. The IETF fields follow
 * draft-ietf-httpapi-ratelimit-headers-11 (May 2026): Structured Field Lists of String items,
 * `RateLimit-Policy` with `q` (quota) and `w` (window seconds), `RateLimit` with `r` (remaining) and
 * `t` (seconds until the window resets). Serialised as RFC 9651 does: members joined by ", ".
 *
 * @example rateLimitHeaders(d)['RateLimit'] // '"minute";r=59;t=42, "day";r=9999;t=3042'
 */
export function rateLimitHeaders(decision: RateDecision): Record<string, string> {
  const { windows } = decision;
  if (decision.unlimited || windows.length === 0) return {};
  const headers: Record<string, string> = {};
  // Plain loops and concatenation: this runs on every limited request (see docs/benchmarks.md).
  let policy = '';
  let state = '';
  for (const w of windows) {
    if (w.name === 'minute') {
      headers['X-RateLimit-Limit'] = String(w.limit);
      headers['X-RateLimit-Remaining'] = String(w.remaining);
      headers['X-RateLimit-Reset'] = String(w.resetAt);
    }
    const sep = policy === '' ? '' : ', ';
    // Window names are a closed union of plain words, so they need no String escaping.
    policy += `${sep}"${w.name}";q=${w.limit};w=${WINDOW_SECONDS[w.name]}`;
    state += `${sep}"${w.name}";r=${w.remaining};t=${w.resetIn}`;
  }
  headers['RateLimit-Policy'] = policy;
  headers.RateLimit = state;
  if (decision.limited && decision.retryAfter !== undefined) {
    headers['Retry-After'] = String(Math.max(1, Math.ceil(decision.retryAfter)));
  }
  return headers;
}
