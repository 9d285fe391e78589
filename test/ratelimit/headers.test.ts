import assert from 'node:assert/strict';
import { test } from 'node:test';
import { rateLimitHeaders } from '../../src/ratelimit/headers.ts';
import { createRateLimiter, type RateDecision } from '../../src/ratelimit/limiter.ts';

const minuteReset = Date.UTC(2030, 0, 15, 12, 31) / 1000;
const dayReset = Date.UTC(2030, 0, 16) / 1000;

test('a passing free request: minute X-RateLimit-* and both IETF windows, no Retry-After', () => {
  const decision: RateDecision = {
    limited: false,
    unlimited: false,
    windows: [
      { name: 'minute', limit: 60, remaining: 59, resetAt: minuteReset, resetIn: 42 },
      { name: 'day', limit: 10_000, remaining: 9_999, resetAt: dayReset, resetIn: 41_442 },
    ],
  };
  assert.deepEqual(rateLimitHeaders(decision), {
    'X-RateLimit-Limit': '60',
    'X-RateLimit-Remaining': '59',
    'X-RateLimit-Reset': String(minuteReset),
    'RateLimit-Policy': '"minute";q=60;w=60, "day";q=10000;w=86400',
    RateLimit: '"minute";r=59;t=42, "day";r=9999;t=41442',
  });
});

test('a minute-limited pro request carries Retry-After', () => {
  const decision: RateDecision = {
    limited: true,
    unlimited: false,
    windows: [
      { name: 'minute', limit: 300, remaining: 0, resetAt: minuteReset, resetIn: 1 },
      { name: 'day', limit: 100_000, remaining: 99_700, resetAt: dayReset, resetIn: 41_401 },
    ],
    retryAfter: 1,
  };
  assert.deepEqual(rateLimitHeaders(decision), {
    'X-RateLimit-Limit': '300',
    'X-RateLimit-Remaining': '0',
    'X-RateLimit-Reset': String(minuteReset),
    'RateLimit-Policy': '"minute";q=300;w=60, "day";q=100000;w=86400',
    RateLimit: '"minute";r=0;t=1, "day";r=99700;t=41401',
    'Retry-After': '1',
  });
});

test('a day-limited request: minute headers still describe the minute, Retry-After waits for midnight', () => {
  const headers = rateLimitHeaders({
    limited: true,
    unlimited: false,
    windows: [
      { name: 'minute', limit: 60, remaining: 19, resetAt: minuteReset, resetIn: 60 },
      { name: 'day', limit: 10_000, remaining: 0, resetAt: dayReset, resetIn: 76_440 },
    ],
    retryAfter: 76_440,
  });
  assert.equal(headers['X-RateLimit-Remaining'], '19');
  assert.equal(headers.RateLimit, '"minute";r=19;t=60, "day";r=0;t=76440');
  assert.equal(headers['Retry-After'], '76440');
});

test('an unlimited (enterprise) decision carries no rate-limit headers', () => {
  assert.deepEqual(rateLimitHeaders({ limited: false, unlimited: true, windows: [] }), {});
});

test('headers of a real limiter decision at hh:mm:59.5', async () => {
  const now = Date.UTC(2030, 0, 15, 12, 30, 59, 500);
  const limiter = createRateLimiter({ now: () => now });
  try {
    let last = await limiter.consume('key_headers', 'free');
    for (let i = 1; i < 61; i++) last = await limiter.consume('key_headers', 'free');
    assert.deepEqual(rateLimitHeaders(last), {
      'X-RateLimit-Limit': '60',
      'X-RateLimit-Remaining': '0',
      'X-RateLimit-Reset': String(minuteReset),
      'RateLimit-Policy': '"minute";q=60;w=60, "day";q=10000;w=86400',
      RateLimit: '"minute";r=0;t=1, "day";r=9940;t=41341',
      'Retry-After': '1',
    });
  } finally {
    await limiter.close();
  }
});
