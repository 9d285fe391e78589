import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { loadConfig } from '../../src/config.ts';
import { CORS_MAX_AGE } from '../../src/http/cors.ts';
import { describeEachDatabase, type TestAccount } from '../helpers/harness.ts';

const APP = 'https://app.example.com';
const OTHER = 'https://evil.example.net';

const preflight = (origin: string, method: string, headers = 'authorization, content-type') => ({
  origin,
  'access-control-request-method': method,
  'access-control-request-headers': headers,
});

describeEachDatabase(
  'cross-origin calls from an allowed browser origin (ADS_CORS_ORIGINS)',
  (h) => {
    let acc: TestAccount;
    before(async () => {
      acc = await h.account('free');
    });

    it('answers a preflight before any key: 204, the methods and headers the API takes', async () => {
      for (const [path, method] of [
        ['/v1/data', 'POST'],
        ['/v1/data/dat_01JD4Z5T8N3QK9W2V7R6M1B0XC', 'PATCH'],
        ['/v1/invitations/accept', 'POST'],
      ] as const) {
        const res = await h.request('OPTIONS', path, {
          key: null,
          headers: preflight(APP, method, 'authorization, content-type, idempotency-key'),
        });
        assert.equal(res.status, 204, `${path}: ${res.raw}`);
        assert.equal(res.headers['access-control-allow-origin'], APP);
        const methods = String(res.headers['access-control-allow-methods']);
        for (const m of ['GET', 'POST', 'PATCH', 'DELETE']) assert.match(methods, new RegExp(m));
        const allowed = String(res.headers['access-control-allow-headers']).toLowerCase();
        for (const name of ['authorization', 'content-type', 'idempotency-key'])
          assert.match(allowed, new RegExp(name));
        assert.equal(res.headers['access-control-max-age'], String(CORS_MAX_AGE));
        assert.match(String(res.headers['x-request-id']), /^req_/);
        assert.equal(res.headers['access-control-allow-credentials'], undefined, 'keys are not cookies');
        // Not authenticated and not counted: a browser sends no key with a preflight.
        assert.equal(res.headers['x-ratelimit-limit'], undefined);
      }
    });

    it('lets the allowed origin read answers, errors included, and the headers that matter', async () => {
      const ok = await h.request('GET', '/v1/data', { key: acc.adminKey, headers: { origin: APP } });
      assert.equal(ok.status, 200);
      assert.equal(ok.headers['access-control-allow-origin'], APP);
      assert.match(String(ok.headers.vary), /origin/i, 'caches keep answers per origin');
      const exposed = String(ok.headers['access-control-expose-headers']);
      for (const name of ['X-Request-Id', 'X-RateLimit-Remaining', 'Retry-After', 'Idempotent-Replayed'])
        assert.match(exposed, new RegExp(name));
      assert.equal(ok.headers['x-ratelimit-limit'], '60', 'the request itself is counted as usual');
      const refused = await h.request('GET', '/v1/data', { key: 'ads_not-a-key', headers: { origin: APP } });
      assert.equal(refused.status, 401);
      assert.equal(refused.headers['access-control-allow-origin'], APP, 'the page can read why');
    });

    it('answers an OPTIONS that is not a preflight as without CORS, and early refusals with CORS headers', async () => {
      const plain = await h.request('OPTIONS', '/v1/data', { key: null });
      assert.equal(plain.status, 405);
      assert.equal(plain.body.error.code, 'method_not_allowed');
      const unknown = await h.request('OPTIONS', '/nonexistent/path', {
        key: null,
        headers: { origin: APP },
      });
      assert.equal(unknown.status, 404);
      assert.equal(unknown.body.error.code, 'not_found');
      // A query refused before the key is read still lets the page read why.
      const undecodable = await h.request('GET', '/v1/data?tag=%FF', {
        key: acc.adminKey,
        headers: { origin: APP },
      });
      assert.equal(undecodable.status, 400);
      assert.equal(undecodable.headers['access-control-allow-origin'], APP);
    });

    it('gives another origin nothing to read', async () => {
      const pre = await h.request('OPTIONS', '/v1/data', { key: null, headers: preflight(OTHER, 'POST') });
      assert.equal(pre.headers['access-control-allow-origin'], undefined);
      const res = await h.request('GET', '/v1/data', { key: acc.adminKey, headers: { origin: OTHER } });
      assert.equal(res.status, 200);
      assert.equal(res.headers['access-control-allow-origin'], undefined);
    });
  },
  { env: { ADS_CORS_ORIGINS: `${APP}, http://localhost:3000` } },
);

describeEachDatabase('cross-origin calls without ADS_CORS_ORIGINS', (h) => {
  it('are not allowed: no CORS headers, and OPTIONS stays 405 in the envelope', async () => {
    const acc = await h.account('free');
    const pre = await h.request('OPTIONS', '/v1/data', { key: null, headers: preflight(APP, 'POST') });
    assert.equal(pre.status, 405);
    assert.equal(pre.body.error.code, 'method_not_allowed');
    assert.equal(pre.headers['access-control-allow-origin'], undefined);
    const res = await h.request('GET', '/v1/data', { key: acc.adminKey, headers: { origin: APP } });
    assert.equal(res.status, 200);
    assert.equal(res.headers['access-control-allow-origin'], undefined);
  });
});

describe('ADS_CORS_ORIGINS', () => {
  const load = (value: string) => loadConfig({ ADS_DATA_DIR: '/tmp/ads-cors-test', ADS_CORS_ORIGINS: value });

  it('takes *, or origins exactly as a browser sends them', () => {
    assert.equal(load('*').corsOrigins, '*');
    assert.deepEqual(load(` ${APP} , http://localhost:3000,`).corsOrigins, [APP, 'http://localhost:3000']);
    assert.deepEqual(load('').corsOrigins, []);
    assert.deepEqual(loadConfig({ ADS_DATA_DIR: '/tmp/ads-cors-test' }).corsOrigins, []);
  });

  it('refuses what no Origin header can equal, naming it', () => {
    for (const bad of [`${APP}/`, 'app.example.com', 'ftp://files.example.com', `${APP}/path`, `${APP}, *`]) {
      assert.throws(() => load(bad), /Invalid setting ADS_CORS_ORIGINS=.* is not an origin/, bad);
    }
  });
});
