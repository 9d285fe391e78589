import assert from 'node:assert/strict';
import { it } from 'node:test';
import { isoNow } from '../../src/lib/time.ts';

it('isoNow answers each clock reading, reusing the string only for the same millisecond', () => {
  const at = (ms: number) => () => ms;
  assert.equal(isoNow(at(0)), '1970-01-01T00:00:00.000Z');
  assert.equal(isoNow(at(Date.UTC(2026, 10, 28, 1, 2, 3, 4))), '2026-11-28T01:02:03.004Z');
  assert.equal(isoNow(at(Date.UTC(2026, 10, 28, 1, 2, 3, 4))), '2026-11-28T01:02:03.004Z');
  assert.equal(isoNow(at(Date.UTC(2026, 10, 28, 1, 2, 3, 5))), '2026-11-28T01:02:03.005Z');
  assert.equal(isoNow(at(0)), '1970-01-01T00:00:00.000Z', 'another clock, earlier');
  assert.throws(() => isoNow(at(Number.NaN)), RangeError);
  const now = Date.now();
  assert.ok(Math.abs(Date.parse(isoNow()) - now) < 60_000, 'the system clock by default');
});
