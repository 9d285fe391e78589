import { type Dispatcher, request } from 'undici';
import { parseRetryAfter } from './retry-policy.ts';
import { serviceSignature, standardWebhookHeaders } from './signing.ts';
import { FORBIDDEN_ADDRESS_CODE } from './ssrf.ts';

/** One POST to a receiver: the raw payload and what identifies it. */
export interface OutgoingWebhook {
  url: string;
  /** The exact bytes to send and sign (the stored event payload). */
  rawBody: string;
  eventName: string;
  /** `X-Service-Delivery`: the delivery id, stable across retries. */
  deliveryId: string;
  /** `webhook-id`: the event id, stable across retries and shared by every webhook receiving it. */
  messageId: string;
  secret: string | null;
}

/** What one attempt came to; `ok` only for a 2xx within the deadline. */
export interface AttemptResult {
  ok: boolean;
  statusCode: number | null;
  durationMs: number;
  error: string | null;
  /** The receiver's Retry-After, in milliseconds from the response. */
  retryAfterMs?: number;
}

const USER_AGENT = 'account-data-service-webhooks/1';
const MAX_ERROR_LENGTH = 500;

/** The request headers of one attempt; the Standard Webhooks signature is fresh for `nowSeconds`. */
export function webhookHeaders(w: OutgoingWebhook, nowSeconds: number): Record<string, string> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': USER_AGENT,
    'x-service-event': w.eventName,
    'x-service-delivery': w.deliveryId,
    'webhook-id': w.messageId,
    'webhook-timestamp': String(nowSeconds),
  };
  if (w.secret !== null) {
    headers['x-service-signature'] = serviceSignature(w.rawBody, w.secret);
    Object.assign(headers, standardWebhookHeaders(w.messageId, nowSeconds, w.rawBody, w.secret));
  }
  return headers;
}

function describeError(err: unknown, timedOut: boolean, timeoutMs: number): string {
  if (timedOut) return `timed out after ${timeoutMs} ms`;
  const e = err as { code?: string; message?: string; cause?: { code?: string; message?: string } };
  if (e?.code === FORBIDDEN_ADDRESS_CODE) return e.message ?? 'target address forbidden';
  if (e?.cause?.code === FORBIDDEN_ADDRESS_CODE) return e.cause.message ?? 'target address forbidden';
  const code = e?.code ?? e?.cause?.code;
  const message = e?.message ?? String(err);
  return (code && !message.includes(code) ? `${code}: ${message}` : message).slice(0, MAX_ERROR_LENGTH);
}

/**
 * Sends one attempt through the guarded dispatcher: a total deadline of `timeoutMs` from connect to
 * the last byte, no redirects (undici `request` never follows them), the response body always
 * drained or dropped. Never throws: every failure comes back described.
 */
export async function sendWebhook(
  dispatcher: Dispatcher,
  w: OutgoingWebhook,
  opts: { timeoutMs: number; now: () => number },
): Promise<AttemptResult> {
  const started = performance.now();
  const signal = AbortSignal.timeout(opts.timeoutMs);
  const elapsed = () => Math.round(performance.now() - started);
  try {
    const res = await request(w.url, {
      dispatcher,
      method: 'POST',
      headers: webhookHeaders(w, Math.floor(opts.now() / 1000)),
      body: w.rawBody,
      signal,
    });
    const statusCode = res.statusCode;
    // The deadline runs to the last byte (decisions §7): the body is read to its end and dropped,
    // however long it is, and an answer whose body had not ended by the deadline, or broke off, is
    // a failure whatever its status. The deadline bounds what a receiver can make us read.
    let bodyError: unknown = null;
    try {
      for await (const _chunk of res.body) {
        // dropped: receivers' answers are never used
      }
    } catch (err) {
      bodyError = err;
    }
    if (signal.aborted || bodyError !== null) {
      return {
        ok: false,
        statusCode,
        durationMs: elapsed(),
        error: signal.aborted
          ? `timed out after ${opts.timeoutMs} ms before the answer ended`
          : `the answer broke off: ${describeError(bodyError, false, opts.timeoutMs)}`,
      };
    }
    const ok = statusCode >= 200 && statusCode < 300;
    let error: string | null = null;
    if (statusCode >= 300 && statusCode < 400) error = `redirect (${statusCode}) not followed`;
    else if (!ok) error = `receiver answered ${statusCode}`;
    const retryAfterMs = ok ? undefined : parseRetryAfter(res.headers['retry-after'], opts.now());
    return {
      ok,
      statusCode,
      durationMs: elapsed(),
      error,
      ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
    };
  } catch (err) {
    return {
      ok: false,
      statusCode: null,
      durationMs: elapsed(),
      error: describeError(err, signal.aborted, opts.timeoutMs),
    };
  }
}
