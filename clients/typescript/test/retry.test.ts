import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { createClient, parseRetryAfter } from '../src/index.ts';

interface Seen {
  method: string;
  body: string;
}

/**
 * The exact back-off rules need answers the service only gives at a minute's end, so these cases
 * use a local server scripted to answer 429 with a chosen Retry-After; client.test.ts covers the
 * real service's 429.
 */
describe('@ads/client back-off on 429', () => {
  let server: http.Server;
  let baseUrl: string;
  let script: Array<{ status: number; retryAfter?: string }> = [];
  const seen: Seen[] = [];
  before(async () => {
    server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (d) => {
        body += d;
      });
      req.on('end', () => {
        seen.push({ method: req.method ?? '', body });
        const next = script.shift() ?? { status: 200 };
        const headers: Record<string, string> = { 'content-type': 'application/json' };
        if (next.retryAfter !== undefined) headers['retry-after'] = next.retryAfter;
        const payload =
          next.status === 429
            ? { error: { code: 'rate_limited', message: 'Slow down.', request_id: 'req_1' } }
            : { data: { id: 'dat_1', title: 'ok', type: 'note' }, meta: { request_id: 'req_2' } };
        res.writeHead(next.status, headers).end(JSON.stringify(payload));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const start = (steps: typeof script) => {
    script = steps;
    seen.length = 0;
  };

  it('waits for Retry-After and sends the same request again, body included', async () => {
    start([{ status: 429, retryAfter: '1' }]);
    const delays: number[] = [];
    const ads = createClient({ baseUrl, apiKey: 'ads_x', retry: { onRetry: (i) => delays.push(i.delayMs) } });
    const res = await ads.POST('/v1/data', { body: { title: 'again', type: 'note' } });
    assert.equal(res.response.status, 200);
    assert.deepEqual(delays, [1000]);
    assert.equal(seen.length, 2);
    assert.equal(seen[1]?.body, seen[0]?.body);
    assert.deepEqual(JSON.parse(seen[1]!.body), { title: 'again', type: 'note' });
  });

  it('stops after maxRetries and returns the last 429 with its error body', async () => {
    start([
      { status: 429, retryAfter: '0' },
      { status: 429, retryAfter: '0' },
      { status: 429, retryAfter: '0' },
    ]);
    const ads = createClient({ baseUrl, apiKey: 'ads_x', retry: { maxRetries: 2 } });
    const res = await ads.GET('/v1/account');
    assert.equal(res.response.status, 429);
    assert.equal(res.error?.error.code, 'rate_limited');
    assert.equal(seen.length, 3);
  });

  it('takes the default number of retries for a maxRetries that is not a number, and at most 10', async () => {
    start(Array.from({ length: 12 }, () => ({ status: 429, retryAfter: '0' })));
    const nan = createClient({ baseUrl, apiKey: 'ads_x', retry: { maxRetries: Number.NaN } });
    assert.equal((await nan.GET('/v1/account')).response.status, 429);
    assert.equal(seen.length, 4);
    start(Array.from({ length: 20 }, () => ({ status: 429, retryAfter: '0' })));
    const many = createClient({ baseUrl, apiKey: 'ads_x', retry: { maxRetries: 50 } });
    assert.equal((await many.GET('/v1/account')).response.status, 429);
    assert.equal(seen.length, 11);
  });

  it('returns at once when Retry-After is longer than maxDelayMs, or when retry is off', async () => {
    start([{ status: 429, retryAfter: '120' }]);
    const res = await createClient({ baseUrl, apiKey: 'ads_x' }).GET('/v1/account');
    assert.equal(res.response.status, 429);
    assert.equal(seen.length, 1);

    start([{ status: 429, retryAfter: '0' }]);
    const off = await createClient({ baseUrl, apiKey: 'ads_x', retry: false }).GET('/v1/account');
    assert.equal(off.response.status, 429);
    assert.equal(seen.length, 1);
  });

  it('stops waiting when the request is aborted', async () => {
    start([{ status: 429, retryAfter: '30' }]);
    const ads = createClient({ baseUrl, apiKey: 'ads_x' });
    const controller = new AbortController();
    const call = ads.GET('/v1/account', { signal: controller.signal });
    const deadline = Date.now() + 5000;
    while (seen.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    controller.abort(new Error('caller gave up'));
    await assert.rejects(call, /caller gave up/);
    assert.equal(seen.length, 1);
  });

  it('reads Retry-After as seconds or as an HTTP date', () => {
    const now = Date.parse('2026-11-22T02:42:16Z');
    assert.equal(parseRetryAfter('7', now), 7000);
    assert.equal(parseRetryAfter('Sun, 22 Nov 2026 02:42:46 GMT', now), 30_000);
    assert.equal(parseRetryAfter('Sun, 22 Nov 2026 02:00:00 GMT', now), 0);
    assert.equal(parseRetryAfter('soon', now), undefined);
    assert.equal(parseRetryAfter(null, now), undefined);
  });
});
