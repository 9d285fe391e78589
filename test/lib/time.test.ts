import assert from 'node:assert/strict';
import { it } from 'node:test';
import { isoNow, isoString } from '../../src/lib/time.ts';

it('isoNow answers each clock reading', () => {
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

it('isoString writes what toISOString writes, for every instant and in any order', () => {
  const expected = (ms: number) => {
    try {
      return new Date(ms).toISOString();
    } catch (e) {
      return (e as Error).constructor.name;
    }
  };
  const actual = (ms: number) => {
    try {
      return isoString(ms);
    } catch (e) {
      return (e as Error).constructor.name;
    }
  };
  const edges = [
    0,
    -0,
    1,
    9,
    10,
    99,
    100,
    999,
    1000,
    1001,
    -1,
    -9,
    -10,
    -999,
    -1000,
    -1001,
    1.7,
    -1.7,
    0.5,
    -0.5,
    // Year 0, the last instant of 9999 and the first of 10000 (written ±YYYYYY), Date's limits.
    -62167219200000,
    -62167219200001,
    253402300799999,
    253402300800000,
    8.64e15,
    -8.64e15,
    8.64e15 - 1,
    -8.64e15 + 1,
    8.64e15 + 1,
    -8.64e15 - 1,
    Number.NaN,
    Number.POSITIVE_INFINITY,
    Number.NEGATIVE_INFINITY,
  ];
  // A fixed-seed walk over the whole range, around now, and back and forth over one second's edge.
  let seed = 7;
  const rand = () => {
    seed = (seed * 16807) % 2147483647;
    return seed / 2147483647;
  };
  const now = Date.UTC(2026, 10, 28, 12, 0, 0, 0);
  const values = [...edges];
  for (let i = 0; i < 20_000; i++) {
    values.push(Math.floor((rand() * 2 - 1) * 8.64e15), now + Math.floor(rand() * 5000), now - 1 + (i % 3));
  }
  for (const ms of values) assert.equal(actual(ms), expected(ms), String(ms));
});
