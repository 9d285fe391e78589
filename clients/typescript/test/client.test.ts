import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { AdsApiError, createClient, paginate } from '../src/index.ts';
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

  it("backs off on a real 429 for the server's Retry-After, then succeeds in the next window", async () => {
    const { key } = instance.account('free');
    const noRetry = createClient({ baseUrl: instance.url, apiKey: key, fetch: instance.fetch, retry: false });
    // Spend the free plan's 60 requests a minute; start over when the window is about to reset, so
    // the calls below surely meet the limit.
    const exhaust = async (): Promise<number> => {
      for (let i = 0; i < 130; i++) {
        const res = await noRetry.GET('/v1/account');
        if (res.response.status === 429) return Number(res.response.headers.get('retry-after'));
      }
      throw new Error('the free plan allows 60 requests a minute');
    };
    let retryAfter = await exhaust();
    for (let round = 0; retryAfter < 5 && round < 3; round++) {
      const deadline = Date.now() + 10_000;
      while ((await noRetry.GET('/v1/account')).response.status === 429) {
        assert.ok(Date.now() < deadline, 'the minute window resets');
        await sleep(200);
      }
      retryAfter = await exhaust();
    }
    assert.ok(retryAfter >= 5 && retryAfter <= 60, `Retry-After ${retryAfter}`);

    const retries: number[] = [];
    const impatient = createClient({
      baseUrl: instance.url,
      apiKey: key,
      fetch: instance.fetch,
      retry: { maxDelayMs: 0, onRetry: ({ delayMs }) => retries.push(delayMs) },
    });
    const refused = await impatient.GET('/v1/account');
    assert.equal(refused.response.status, 429, 'a wait above maxDelayMs is not taken');
    assert.equal(refused.error?.error.code, 'rate_limited');
    assert.equal(retries.length, 0, 'no retry was attempted');

    const patient = createClient({
      baseUrl: instance.url,
      apiKey: key,
      fetch: instance.fetch,
      retry: { maxRetries: 2, onRetry: ({ delayMs }) => retries.push(delayMs) },
    });
    const res = await patient.GET('/v1/account');
    assert.equal(res.response.status, 200, 'succeeds once the minute window reset');
    assert.equal(res.data?.data.plan, 'free');
    assert.equal(retries.length, 1);
    assert.ok(retries[0]! >= 1000 && retries[0]! <= 60_000, `waited ${retries[0]} ms as Retry-After said`);
    assert.ok(Number(res.response.headers.get('x-ratelimit-remaining')) >= 55, 'a fresh minute window');
  });
});
