import { createHmac, timingSafeEqual } from 'node:crypto';
import type { webhooks } from './schema.d.ts';

/** Any event the service sends, discriminated by `event`. */
export type WebhookEvent = {
  [E in keyof webhooks]: webhooks[E]['post']['requestBody']['content']['application/json'];
}[keyof webhooks];

/** Request headers as Node (`IncomingMessage.headers`) or fetch (`Headers`) give them. */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

/** Why a delivery was refused; `reason` is stable enough to log or count. */
export class WebhookVerificationError extends Error {
  readonly reason: 'missing_header' | 'bad_signature' | 'stale_timestamp' | 'bad_payload';

  constructor(reason: WebhookVerificationError['reason'], message: string) {
    super(message);
    this.name = 'WebhookVerificationError';
    this.reason = reason;
  }
}

const MAX_SIGNATURES = 16;

function header(headers: WebhookHeaders, name: string): string {
  // Node lower-cases header names; a plain object built by hand or by another framework may not.
  const raw =
    headers instanceof Headers
      ? headers.get(name)
      : (headers[name] ?? Object.entries(headers).find(([key]) => key.toLowerCase() === name)?.[1]);
  const value = Array.isArray(raw) ? raw[0] : raw;
  if (typeof value !== 'string' || value === '') {
    throw new WebhookVerificationError('missing_header', `The ${name} header is missing.`);
  }
  return value;
}

function hmac(secret: string, ...parts: (string | Uint8Array)[]): Buffer {
  const mac = createHmac('sha256', Buffer.from(secret, 'utf8'));
  for (const part of parts) mac.update(part);
  return mac.digest();
}

const same = (a: Buffer, b: Buffer) => a.length === b.length && timingSafeEqual(a, b);

/**
 * Verifies a delivery before its body is trusted: `X-Service-Signature` (hex HMAC-SHA256 of the
 * raw body) and the Standard Webhooks signature over `{webhook-id}.{webhook-timestamp}.{body}`,
 * both keyed with the secret's UTF-8 bytes and compared in constant time, with `webhook-timestamp`
 * within `toleranceSeconds` of now so a captured delivery cannot be replayed later. Returns the
 * parsed event; throws WebhookVerificationError otherwise. Pass the body exactly as received.
 * @example const event = verifyWebhook(rawBody, req.headers, process.env.ADS_WEBHOOK_SECRET!);
 */
export function verifyWebhook(
  rawBody: string | Uint8Array,
  headers: WebhookHeaders,
  secret: string,
  { toleranceSeconds = 300 }: { toleranceSeconds?: number } = {},
): WebhookEvent {
  const body = typeof rawBody === 'string' ? Buffer.from(rawBody, 'utf8') : Buffer.from(rawBody);
  const serviceSignature = header(headers, 'x-service-signature').trim();
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');

  const given = /^[0-9a-f]{64}$/i.test(serviceSignature)
    ? Buffer.from(serviceSignature, 'hex')
    : Buffer.alloc(0);
  if (!same(given, hmac(secret, body))) {
    throw new WebhookVerificationError('bad_signature', 'X-Service-Signature does not match the body.');
  }

  if (!/^[0-9]{1,12}$/.test(timestamp)) {
    throw new WebhookVerificationError('stale_timestamp', 'webhook-timestamp is not a number of seconds.');
  }
  const age = Math.abs(Date.now() / 1000 - Number(timestamp));
  if (age > toleranceSeconds) {
    throw new WebhookVerificationError(
      'stale_timestamp',
      `webhook-timestamp is ${Math.round(age)} s away from now.`,
    );
  }
  const expected = hmac(secret, `${id}.${timestamp}.`, body);
  const matched = signatures
    .split(' ')
    .slice(0, MAX_SIGNATURES)
    .some((entry) => {
      const [version, b64] = entry.split(',', 2);
      return version === 'v1' && b64 !== undefined && same(Buffer.from(b64, 'base64'), expected);
    });
  if (!matched) {
    throw new WebhookVerificationError('bad_signature', 'webhook-signature does not match the body.');
  }

  try {
    return JSON.parse(body.toString('utf8')) as WebhookEvent;
  } catch {
    throw new WebhookVerificationError('bad_payload', 'The body is not JSON.');
  }
}
