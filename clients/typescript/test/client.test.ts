import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { createHarness } from '../../../test/helpers/harness.ts';
import { AdsApiError, createClient, paginate } from '../src/index.ts';
import type { FetchLike } from '../src/retry.ts';
import { type Instance, startInstance } from './instance.ts';

describe('@ads/client against a real server', () => {
  let instance: Instance;
  let ads: ReturnType<typeof createClient>;
  before(async () => {
    instance = await startInstance();
    const { key } = instance.account('enterprise');
    ads = createClient({ baseUrl: instance.url, apiKey: key, fetch: instance.fetch });
  });
  after(() => instance?.close());

  it('creates, reads, changes and deletes a data object with typed calls', async () => {
    const created = await ads.POST('/v1/data', {
      body: { title: 'Quarterly report', type: 'document', content: 'Revenue grew.', tags: ['finance'] },
    });
    assert.equal(created.response.status, 201);
    const id = created.data?.data.id;
    assert.match(String(id), /^dat_/);

    const got = await ads.GET('/v1/data/{id}', { params: { path: { id: id! } } });
    assert.equal(got.data?.data.title, 'Quarterly report');
    assert.deepEqual(got.data?.data.tags, ['finance']);

    const patched = await ads.PATCH('/v1/data/{id}', {
      params: { path: { id: id! } },
      body: { title: 'Q3' },
    });
    assert.equal(patched.data?.data.title, 'Q3');

    const deleted = await ads.DELETE('/v1/data/{id}', { params: { path: { id: id! } } });
    assert.equal(deleted.response.status, 204);
    const gone = await ads.GET('/v1/data/{id}', { params: { path: { id: id! } } });
    assert.equal(gone.response.status, 404);
    assert.equal(gone.error?.error.code, 'not_found');
    assert.equal(gone.error?.error.request_id, gone.response.headers.get('x-request-id'));
  });

  it('paginates a collection page by page, from any page', async () => {
    const ids = new Set<string>();
    for (let i = 0; i < 25; i++) {
      const res = await ads.POST('/v1/data', { body: { title: `Page item ${i}`, type: 'note' } });
      ids.add(res.data!.data.id);
    }
    const seen: string[] = [];
    const pages: number[] = [];
    for await (const page of paginate(ads, '/v1/data', { limit: 10, sort: 'title', order: 'asc' })) {
      pages.push(page.meta.page);
      seen.push(...page.data.items.map((item) => item.id));
    }
    assert.deepEqual(pages, [1, 2, 3]);
    assert.equal(seen.length, 25);
    assert.deepEqual(new Set(seen), ids);

    const rest: number[] = [];
    for await (const page of paginate(ads, '/v1/data', { limit: 10, page: 2 }))
      rest.push(page.data.items.length);
    assert.deepEqual(rest, [10, 5]);
  });

  it('walks a collection below a path parameter', async () => {
    const hook = await ads.POST('/v1/webhooks', {
      body: { url: 'https://hooks.example.com/client', events: ['data.created'] },
    });
    const id = hook.data!.data.id;
    const pages = [];
    for await (const page of paginate(ads, '/v1/webhooks/{id}/deliveries', { limit: 5 }, { id }))
      pages.push(page);
    assert.equal(pages.length, 1);
    assert.equal(pages[0]?.data.total, 0);
  });

  it('walks search results, whose q is required', async () => {
    await ads.POST('/v1/data', { body: { title: 'Walkable search result', type: 'note' } });
    const pages = [];
    for await (const page of paginate(ads, '/v1/search', { q: 'walkable', limit: 5 })) pages.push(page);
    assert.equal(pages.length, 1);
    assert.equal(pages[0]?.data.results[0]?.title, 'Walkable search result');
  });

  it('reads the text metrics as text', async () => {
    const metrics = await ads.GET('/metrics');
    assert.equal(metrics.response.status, 200);
    assert.equal(typeof metrics.data, 'string');
    assert.match(String(metrics.data), /^# HELP /m);
    // An explicit parser still wins.
    const stream = await ads.GET('/metrics', { parseAs: 'stream' });
    assert.ok(stream.data instanceof ReadableStream);
    await stream.data.cancel();
  });

  it('throws AdsApiError with the code, message and request id of a failed page', async () => {
    const pages = paginate(ads, '/v1/data', { limit: 101 });
    const err = await pages.next().then(
      () => assert.fail('a limit of 101 must be refused'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof AdsApiError);
    assert.equal(err.status, 400);
    assert.equal(err.code, 'invalid_request');
    assert.match(String(err.requestId), /^req_/);
    assert.equal(err.details?.[0]?.field, 'limit');
  });

  it('answers a bad key with a typed 401 error', async () => {
    const bad = createClient({ baseUrl: instance.url, apiKey: 'ads_not-a-key', fetch: instance.fetch });
    const res = await bad.GET('/v1/account');
    assert.equal(res.response.status, 401);
    assert.equal(res.error?.error.code, 'unauthorized');
    assert.match(String(res.response.headers.get('www-authenticate')), /^Bearer/);
  });
});

// The service's own limiter and clock, in process: the clock is set 0.8 s before a minute ends, so
// the real Retry-After is 1 s and the test waits one second instead of up to a minute.
describe("@ads/client back-off on the service's real 429", () => {
  const h = createHarness('sqlite');
  before(() => h.setup());
  after(() => h.teardown());

  it("waits for the server's Retry-After, then succeeds in the next window", async () => {
    h.clock.now = Date.UTC(2026, 0, 5, 12, 0, 59, 200);
    const { adminKey: apiKey } = await h.account('free');
    const fetch = injectFetch(h.app);
    const baseUrl = 'https://ads.test';
    const noRetry = createClient({ baseUrl, apiKey, fetch, retry: false });
    for (let i = 0; i < 60; i++) assert.equal((await noRetry.GET('/v1/account')).response.status, 200);
    const limited = await noRetry.GET('/v1/account');
    assert.equal(limited.response.status, 429, 'the free plan allows 60 requests a minute');
    assert.equal(limited.response.headers.get('retry-after'), '1');

    const retries: number[] = [];
    const impatient = createClient({
      baseUrl,
      apiKey,
      fetch,
      retry: { maxDelayMs: 0, onRetry: ({ delayMs }) => retries.push(delayMs) },
    });
    const refused = await impatient.GET('/v1/account');
    assert.equal(refused.response.status, 429, 'a wait above maxDelayMs is not taken');
    assert.equal(refused.error?.error.code, 'rate_limited');
    assert.equal(retries.length, 0, 'no retry was attempted');

    const patient = createClient({
      baseUrl,
      apiKey,
      fetch,
      retry: {
        maxRetries: 2,
        onRetry: ({ delayMs }) => {
          retries.push(delayMs);
          h.clock.now = Date.UTC(2026, 0, 5, 12, 1, 0, 300); // the service's next minute
        },
      },
    });
    const res = await patient.GET('/v1/account');
    assert.equal(res.response.status, 200, 'succeeds once the minute window reset');
    assert.equal(res.data?.data.plan, 'free');
    assert.deepEqual(retries, [1000], 'waited exactly the Retry-After the server sent');
    assert.equal(res.response.headers.get('x-ratelimit-remaining'), '59', 'a fresh minute window');
  });
});

/** A fetch that hands each request to the in-process app (inject), headers and body intact. */
function injectFetch(app: FastifyInstance): FetchLike {
  return async (request) => {
    const url = new URL(request.url);
    const payload = request.body ? await request.text() : undefined;
    const res = await app.inject({
      method: request.method as 'GET',
      url: url.pathname + url.search,
      headers: Object.fromEntries(request.headers),
      payload,
    });
    const headers = new Headers();
    for (const [name, value] of Object.entries(res.headers)) {
      if (value === undefined) continue;
      for (const v of Array.isArray(value) ? value : [value]) headers.append(name, String(v));
    }
    return new Response(res.body === '' ? null : res.body, { status: res.statusCode, headers });
  };
}

// Never called: type-checked by `npm run build`, which fails if a required parameter of a walked
// path became optional to paginate (each @ts-expect-error would then be unused).
export function paginateRequiresWhatThePathRequires(ads: ReturnType<typeof createClient>) {
  // @ts-expect-error `q` is required by /v1/search.
  paginate(ads, '/v1/search');
  // @ts-expect-error `q` is required by /v1/search.
  paginate(ads, '/v1/search', { limit: 5 });
  // @ts-expect-error the path parameter `id` is required.
  paginate(ads, '/v1/webhooks/{id}/deliveries', { limit: 5 });
  paginate(ads, '/v1/webhooks/{id}/deliveries', undefined, { id: 'wh_1' });
  paginate(ads, '/v1/data');
}
