import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import { changePlan } from '../../src/modules/accounts/service.ts';
import { describeEachDatabase, type Harness, type TestAccount } from '../helpers/harness.ts';

// 2026-11-22T10:15:30.000Z: 30 s into a minute, 10h15m30s into the UTC day.
const T0 = Date.UTC(2026, 10, 22, 10, 15, 30);

async function burn(h: Harness, key: string, n: number) {
  const statuses: number[] = [];
  for (let i = 0; i < n; i++) statuses.push((await h.request('GET', '/v1/data', { key })).status);
  return statuses;
}

describeEachDatabase('rate limits over HTTP', (h) => {
  let acc: TestAccount;
  before(async () => {
    acc = await h.account('free');
  });

  it('lets the 60th request of a minute through and refuses the 61st with 429, Retry-After and headers', async () => {
    h.clock.now = T0;
    const { key } = await acc.user('member', ['read', 'write']);
    const statuses = await burn(h, key, 60);
    assert.deepEqual(new Set(statuses), new Set([200]));
    const last = await h.request('GET', '/v1/data', { key });
    assert.equal(last.status, 429);
    assert.equal(last.body.error.code, 'rate_limited');
    assert.equal(last.headers['retry-after'], '30', 'whole seconds until the aligned minute ends');
    assert.equal(last.headers['x-ratelimit-limit'], '60');
    assert.equal(last.headers['x-ratelimit-remaining'], '0');
    assert.equal(last.headers['x-ratelimit-reset'], String(T0 / 1000 + 30));
    h.clock.now = T0 + 30_000; // the next minute starts
    const next = await h.request('GET', '/v1/data', { key });
    assert.equal(next.status, 200);
    assert.equal(next.headers['x-ratelimit-remaining'], '59');
  });

  it('carries the rate-limit headers on every response to a limited key, errors included', async () => {
    h.clock.now = T0 + 120_000;
    const { key } = await acc.user('member', ['read']);
    const ok = await h.request('GET', '/v1/data', { key });
    assert.equal(ok.headers['x-ratelimit-limit'], '60');
    assert.equal(ok.headers['x-ratelimit-remaining'], '59');
    assert.match(String(ok.headers['ratelimit-policy']), /"minute";q=60;w=60, "day";q=10000;w=86400/);
    assert.match(String(ok.headers.ratelimit), /"minute";r=59;t=30, "day";r=9999;t=\d+/);
    const missing = await h.request('GET', '/v1/data/dat_01JD4Z5T8N3QK9W2V7R6M1B0XC', { key });
    assert.equal(missing.status, 404);
    assert.equal(missing.headers['x-ratelimit-remaining'], '58');
    const forbidden = await h.request('POST', '/v1/data', { key, body: { title: 't', type: 'note' } });
    assert.equal(forbidden.status, 403);
    assert.equal(forbidden.headers['x-ratelimit-remaining'], '57');
    // An unknown path and a wrong method are answered to the key too.
    const unknown = await h.request('GET', '/v1/nope', { key });
    assert.equal(unknown.status, 404);
    assert.equal(unknown.headers['x-ratelimit-remaining'], '56');
    assert.match(String(unknown.headers.ratelimit), /"minute";r=56;/);
    const wrongMethod = await h.request('DELETE', '/v1/webhooks', { key });
    assert.equal(wrongMethod.status, 405);
    assert.equal(wrongMethod.headers['x-ratelimit-remaining'], '55');
    // So is a path the router cannot decode (it used to fail before any hook ran).
    let remaining = 55;
    for (const url of ['/v1/data/%E0%A4%A', '/v1/data/%zz', '/v1/%?q=1']) {
      const res = await h.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${key}` } });
      assert.equal(res.statusCode, 404, url);
      assert.equal(res.json().error.message, 'No such resource: the URL cannot be decoded.');
      assert.equal(res.headers['x-ratelimit-remaining'], String(--remaining), url);
    }
    // And ids longer than any resource has, on every kind of route that takes one (the router
    // used to refuse them before any hook ran).
    const long = 'x'.repeat(300);
    for (const [method, url] of [
      ['GET', `/v1/data/${long}`],
      ['GET', `/v1/items/${long}`],
      ['GET', `/v1/webhooks/${long}/deliveries`],
      ['DELETE', `/v1/api-keys/${long}`],
      ['GET', `/v1/${long}`],
    ] as const) {
      const res = await h.app.inject({ method, url, headers: { authorization: `Bearer ${key}` } });
      assert.equal(res.statusCode, 404, url.slice(0, 40));
      assert.equal(res.json().error.code, 'not_found');
      assert.equal(res.headers['x-ratelimit-remaining'], String(--remaining), url.slice(0, 40));
    }
    const unauthenticated = await h.app.inject({
      method: 'GET',
      url: '/v1/data/%zz',
      headers: { authorization: 'Bearer ads_notakey' },
    });
    assert.equal(unauthenticated.statusCode, 404);
    assert.equal(unauthenticated.headers['x-ratelimit-limit'], undefined);
  });

  it('leaves an unknown path a 404 with no rate-limit headers without a valid key', async () => {
    h.clock.now = T0 + 240_000;
    for (const key of [undefined, 'ads_notakey', `ads_${'A'.repeat(43)}`]) {
      const res = await h.request('GET', '/v1/nope', key === undefined ? {} : { key });
      assert.equal(res.status, 404, String(key));
      assert.equal(res.body.error.code, 'not_found');
      assert.equal(res.headers['x-ratelimit-limit'], undefined);
    }
  });

  it('refuses past the day budget until 00:00 UTC', async () => {
    const day = await h.account('free');
    const { key, keyId } = await day.user('member', ['read']);
    // Spend 10,000 requests over many minutes through the limiter itself (fast), then ask over HTTP.
    for (let m = 0; m < 167; m++) {
      h.clock.now = Date.UTC(2026, 10, 22, 0, m, 0);
      const n = m === 166 ? 10_000 - 166 * 60 : 60;
      for (let i = 0; i < n; i++) await h.ctx.rateLimiter.consume(keyId, 'free');
    }
    h.clock.now = Date.UTC(2026, 10, 22, 20, 0, 0);
    const res = await h.request('GET', '/v1/data', { key });
    assert.equal(res.status, 429);
    assert.equal(res.headers['retry-after'], String(4 * 3600), 'until midnight UTC');
    h.clock.now = Date.UTC(2026, 10, 23, 0, 0, 0);
    assert.equal((await h.request('GET', '/v1/data', { key })).status, 200);
  });

  it('never limits an enterprise key and sends no rate-limit headers', async () => {
    h.clock.now = T0 + 600_000;
    const ent = await h.account('enterprise');
    const statuses = await burn(h, ent.adminKey, 120);
    assert.deepEqual(new Set(statuses), new Set([200]));
    const res = await h.request('GET', '/v1/data', { key: ent.adminKey });
    assert.equal(res.headers['x-ratelimit-limit'], undefined);
  });

  it('applies a plan change to the very next request', async () => {
    h.clock.now = T0 + 900_000;
    const up = await h.account('free');
    await burn(h, up.adminKey, 60);
    assert.equal((await h.request('GET', '/v1/data', { key: up.adminKey })).status, 429);
    assert.ok(await changePlan(h.database, up.id, 'pro'));
    const res = await h.request('GET', '/v1/data', { key: up.adminKey });
    assert.equal(res.status, 200);
    assert.equal(res.headers['x-ratelimit-limit'], '300');
  });

  it('shows the plan, its limits and the calling key usage at GET /account', async () => {
    h.clock.now = T0 + 1_200_000;
    const pro = await h.account('pro');
    await burn(h, pro.adminKey, 4);
    const res = await h.request('GET', '/v1/account', { key: pro.adminKey });
    assert.equal(res.status, 200);
    const a = res.body.data;
    assert.equal(a.id, pro.id);
    assert.equal(a.plan, 'pro');
    assert.deepEqual(a.limits, { requests_per_minute: 300, requests_per_day: 100_000 });
    assert.equal(a.usage.minute.used, 5, 'four earlier calls and this one');
    assert.equal(a.usage.minute.remaining, 295);
    assert.equal(a.usage.day.limit, 100_000);
    assert.equal(a.usage.minute.reset_at, new Date(T0 + 1_200_000 + 30_000).toISOString());
    const ent = await h.account('enterprise');
    const e = await h.request('GET', '/v1/account', { key: ent.adminKey });
    assert.equal(e.body.data.limits, null);
    assert.equal(e.body.data.usage, null);
  });
});
