import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { assertContract, type Exchange } from '../helpers/contract.ts';
import { createHarness, type TestAccount } from '../helpers/harness.ts';

// Every h.request of the suite runs assertContract; these cases prove it refuses what it must.
describe('contract check of responses against the OpenAPI document', () => {
  const h = createHarness('sqlite');
  let acc: TestAccount;
  before(async () => {
    await h.setup();
    acc = await h.account('free');
  });
  after(() => h.teardown());

  /** A real exchange with the app, unchecked, to alter in each case. */
  const exchange = async (method: string, url: string, key?: string): Promise<Exchange> => {
    const headers: Record<string, string> = key ? { authorization: `Bearer ${key}` } : {};
    const res = await h.app.inject({ method: method as 'GET', url, headers });
    return { method, url, status: res.statusCode, headers: { ...res.headers }, raw: res.body };
  };
  const refuses = (ex: Exchange, message: RegExp) =>
    assert.throws(
      () => assertContract(h.app, ex),
      (e: Error) => message.test(e.message),
    );

  it('accepts real responses: success, templated path with a query, unknown route, hidden page', async () => {
    assertContract(h.app, await exchange('GET', '/v1/account', acc.adminKey));
    const missing = await exchange('GET', '/v1/data/dat_01JD4Z5T8N3QK9W2V7R6M1B0XC', acc.adminKey);
    assert.equal(missing.status, 404);
    assertContract(h.app, missing);
    const unknownQuery = await exchange('GET', '/v1/data/dat_01JD4Z5T8N3QK9W2V7R6M1B0XC?x=1', acc.adminKey);
    assert.equal(unknownQuery.status, 400);
    assertContract(h.app, unknownQuery);
    assertContract(h.app, await exchange('GET', '/v1/nothing-here'));
    assertContract(h.app, await exchange('DELETE', '/v1/account', acc.adminKey));
    assertContract(h.app, await exchange('GET', '/docs'));
  });

  it('refuses a body that breaks the schema of its route and status', async () => {
    const ex = await exchange('GET', '/v1/account', acc.adminKey);
    const body = JSON.parse(ex.raw);
    body.data.plan = 'gold';
    refuses({ ...ex, raw: JSON.stringify(body) }, /GET \/v1\/account -> 200[\s\S]*body\/data\/plan/);
    refuses({ ...ex, raw: 'not json' }, /body is not JSON/);
  });

  it('refuses a status the operation does not list', async () => {
    const ex = await exchange('GET', '/v1/account', acc.adminKey);
    refuses({ ...ex, status: 418 }, /status 418 is not in the document/);
  });

  it('refuses a missing required header or a malformed one', async () => {
    const ex = await exchange('GET', '/v1/account', acc.adminKey);
    const { 'x-request-id': _gone, ...rest } = ex.headers;
    refuses({ ...ex, headers: rest }, /X-Request-Id/);
    refuses({ ...ex, headers: { ...ex.headers, 'x-ratelimit-remaining': 'lots' } }, /X-RateLimit-Remaining/);
    const unauthorized = await exchange('GET', '/v1/account', 'ads_wrong');
    assertContract(h.app, unauthorized);
    const { 'www-authenticate': _w, ...noChallenge } = unauthorized.headers;
    refuses({ ...unauthorized, headers: noChallenge }, /WWW-Authenticate is required/);
  });

  it('refuses a 429 without Retry-After and an error outside the closed set of codes', async () => {
    const ex = await exchange('GET', '/v1/account', acc.adminKey);
    const limited = {
      ...ex,
      status: 429,
      raw: JSON.stringify({ error: { code: 'rate_limited', message: 'Slow down.', request_id: 'req_1' } }),
    };
    refuses(limited, /Retry-After is required/);
    assertContract(h.app, { ...limited, headers: { ...ex.headers, 'retry-after': '12' } });
    const odd = await exchange('GET', '/v1/nothing-here');
    refuses(
      { ...odd, raw: JSON.stringify({ error: { code: 'teapot', message: 'x', request_id: 'r' } }) },
      /code/,
    );
    refuses({ ...odd, status: 200 }, /a success from a route the document does not describe/);
  });
});
