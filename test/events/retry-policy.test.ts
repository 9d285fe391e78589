import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { nextRetry, parseRetryAfter } from '../../src/events/retry-policy.ts';

const SCHEDULE = [60, 300, 1800, 7200, 28800];
const noJitter = () => 0;

describe('nextRetry', () => {
  it('walks the schedule one step per failure and stops after the last retry', () => {
    const delays: number[] = [];
    let used = 0;
    for (;;) {
      const step = nextRetry(SCHEDULE, used, undefined, noJitter);
      if (!step) break;
      delays.push(step.delayMs);
      used = step.retriesUsed;
    }
    assert.deepEqual(delays, [60_000, 300_000, 1_800_000, 7_200_000, 28_800_000]);
    assert.equal(used, 5);
    assert.equal(nextRetry(SCHEDULE, 5), null);
    assert.equal(nextRetry([], 0), null);
  });

  it('adds at most 10% jitter, never less than the scheduled wait', () => {
    assert.equal(nextRetry(SCHEDULE, 0, undefined, () => 0)?.delayMs, 60_000);
    assert.equal(nextRetry(SCHEDULE, 0, undefined, () => 0.999999)?.delayMs, 66_000);
    for (let i = 0; i < 200; i++) {
      const d = nextRetry(SCHEDULE, 1)?.delayMs ?? 0;
      assert.ok(d >= 300_000 && d <= 330_000, String(d));
    }
  });

  it('honours a longer Retry-After, spending one retry like any failure', () => {
    assert.deepEqual(nextRetry(SCHEDULE, 0, 400_000, noJitter), { delayMs: 400_000, retriesUsed: 1 });
    assert.deepEqual(nextRetry(SCHEDULE, 3, 10_000_000, noJitter), { delayMs: 10_000_000, retriesUsed: 4 });
  });

  it('ignores a Retry-After shorter than the scheduled wait', () => {
    assert.deepEqual(nextRetry(SCHEDULE, 2, 1_000, noJitter), { delayMs: 1_800_000, retriesUsed: 3 });
  });

  it("never waits longer than the schedule's longest step, and always makes every retry", () => {
    let used = 0;
    const delays: number[] = [];
    for (;;) {
      const step = nextRetry(SCHEDULE, used, 365 * 86_400_000, noJitter);
      if (!step) break;
      delays.push(step.delayMs);
      used = step.retriesUsed;
    }
    assert.deepEqual(delays, [28_800_000, 28_800_000, 28_800_000, 28_800_000, 28_800_000]);
  });
});

describe('parseRetryAfter', () => {
  const now = Date.parse('2026-01-01T00:00:00Z');

  it('reads delta-seconds and HTTP dates', () => {
    assert.equal(parseRetryAfter('120', now), 120_000);
    assert.equal(parseRetryAfter(' 0 ', now), 0);
    assert.equal(parseRetryAfter(['5', '9'], now), 5_000);
    assert.equal(parseRetryAfter('Thu, 01 Jan 2026 00:01:30 GMT', now), 90_000);
    assert.equal(parseRetryAfter('Wed, 31 Dec 2025 23:00:00 GMT', now), 0, 'a past date means now');
  });

  it('returns undefined for absent or malformed values', () => {
    for (const v of [undefined, '', '-5', '1.5', 'soon', '12abc', '2026-01-01']) {
      assert.equal(parseRetryAfter(v, now), undefined, String(v));
    }
  });
});
