import { createHmac, timingSafeEqual } from 'node:crypto';

/** Headers defined by the Standard Webhooks specification. */
export interface StandardWebhookHeaders {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
}

const HEX_SHA256 = /^[0-9a-f]{64}$/i;

function hmacSha256(secret: string, content: string | Buffer): Buffer {
  return createHmac('sha256', Buffer.from(secret, 'utf8')).update(content).digest();
}

/** Hex HMAC-SHA256 of the raw body keyed with the secret: the `X-Service-Signature` header value. */
export function serviceSignature(rawBody: string | Buffer, secret: string): string {
  return hmacSha256(secret, rawBody).toString('hex');
}

/**
 * Standard Webhooks headers; the HMAC key is the secret's UTF-8 bytes, so a receiver verifies with
 * `new Webhook(Buffer.from(secret, 'utf8').toString('base64'))` from the `standardwebhooks` package.
 */
export function standardWebhookHeaders(
  msgId: string,
  timestampSeconds: number,
  rawBody: string,
  secret: string,
): StandardWebhookHeaders {
  if (!Number.isSafeInteger(timestampSeconds) || timestampSeconds < 0) {
    throw new RangeError('timestampSeconds must be a non-negative integer number of seconds');
  }
  const signature = hmacSha256(secret, `${msgId}.${timestampSeconds}.${rawBody}`).toString('base64');
  return {
    'webhook-id': msgId,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': `v1,${signature}`,
  };
}

/** Timing-safe check of an `X-Service-Signature` value; false for a missing or malformed header. */
export function verifyServiceSignature(
  rawBody: string | Buffer,
  secret: string,
  header: string | string[] | null | undefined,
): boolean {
  if (typeof header !== 'string') return false;
  const candidate = header.trim();
  if (!HEX_SHA256.test(candidate)) return false;
  const given = Buffer.from(candidate, 'hex');
  const expected = hmacSha256(secret, rawBody);
  return given.length === expected.length && timingSafeEqual(given, expected);
}
