/** What a fetch function looks like to openapi-fetch: a Request in, a Response out. */
export type FetchLike = (input: Request, init?: RequestInit) => Promise<Response>;

/** Back-off on `429 Too Many Requests`. */
export interface RetryOptions {
  /** Retries after the first attempt (default 3, at most 10); 0 turns back-off off. */
  maxRetries?: number;
  /** Longest wait the client accepts; a longer Retry-After returns the 429 at once (default 60 s). */
  maxDelayMs?: number;
  /** Called before each wait, e.g. to log it. */
  onRetry?: (info: { attempt: number; delayMs: number; response: Response }) => void;
}

const DEFAULT_RETRIES = 3;
const MAX_RETRIES = 10;
const DEFAULT_MAX_DELAY_MS = 60_000;
// Without Retry-After (the service always sends it) waits grow 1 s, 2 s, 4 s, …
const FALLBACK_BASE_MS = 1000;

/**
 * Milliseconds a `Retry-After` value asks for (delta-seconds or an HTTP date), or undefined.
 * @example parseRetryAfter('3') // 3000
 */
export function parseRetryAfter(value: string | null, now = Date.now()): number | undefined {
  if (value === null) return undefined;
  const text = value.trim();
  if (/^[0-9]{1,10}$/.test(text)) return Number(text) * 1000;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

function sleep(ms: number, signal: AbortSignal | null): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Wraps a fetch so a `429` is retried after the server's `Retry-After`, at most `maxRetries` times
 * and never waiting longer than `maxDelayMs`; the last 429 is returned as is when the budget ends.
 */
export function withRetry(fetchFn: FetchLike, options: RetryOptions = {}): FetchLike {
  // A value that is not a finite number (NaN) takes the default: NaN would never end the loop.
  const finite = (n: number | undefined, fallback: number) => (Number.isFinite(n) ? (n as number) : fallback);
  const maxRetries = Math.max(
    0,
    Math.min(Math.floor(finite(options.maxRetries, DEFAULT_RETRIES)), MAX_RETRIES),
  );
  const maxDelayMs = Math.max(0, finite(options.maxDelayMs, DEFAULT_MAX_DELAY_MS));
  return async (request, init) => {
    for (let attempt = 0; ; attempt++) {
      // Each attempt sends a copy, so the body can be sent again.
      const response = await fetchFn(attempt < maxRetries ? request.clone() : request, init);
      if (response.status !== 429 || attempt >= maxRetries) return response;
      const asked = parseRetryAfter(response.headers.get('retry-after'));
      const delayMs = asked ?? Math.min(FALLBACK_BASE_MS * 2 ** attempt, maxDelayMs);
      if (delayMs > maxDelayMs) return response;
      await response.body?.cancel();
      options.onRetry?.({ attempt: attempt + 1, delayMs, response });
      await sleep(delayMs, request.signal);
    }
  };
}
