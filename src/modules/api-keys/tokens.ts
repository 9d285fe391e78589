import { createHash, randomBytes } from 'node:crypto';

const KEY_RE = /^ads_[A-Za-z0-9_-]{43}$/;

/** A new API key: `ads_` + 256 random bits. Shown once; only its hash is stored. */
export function generateApiKey(): { key: string; hash: string; prefix: string } {
  const key = `ads_${randomBytes(32).toString('base64url')}`;
  return { key, hash: hashSecret(key), prefix: key.slice(0, 12) };
}

/**
 * SHA-256 of a high-entropy secret. A slow password hash buys nothing for 256-bit random keys, and
 * lookups by hash through a unique index never compare secrets byte by byte in our code.
 */
export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

/** Cheap shape check before any database work. */
export const looksLikeApiKey = (s: string) => KEY_RE.test(s);
