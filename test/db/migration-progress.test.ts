import assert from 'node:assert/strict';
import { test } from 'node:test';
import { progressEvery } from '../../src/db/database.ts';

test('progressEvery passes on at most one report per interval, the first after one', async () => {
  const seen: [string, number][] = [];
  const report = progressEvery((m, n) => seen.push([m, n]), 300);
  report('0020-account-tags', 1000);
  assert.deepEqual(seen, [], 'not before the first interval');
  await new Promise((r) => setTimeout(r, 350));
  report('0020-account-tags', 2000);
  report('0020-account-tags', 3000);
  assert.deepEqual(seen, [['0020-account-tags', 2000]]);
  await new Promise((r) => setTimeout(r, 350));
  report('0020-account-tags', 4000);
  assert.deepEqual(seen, [
    ['0020-account-tags', 2000],
    ['0020-account-tags', 4000],
  ]);
});
