import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import { tryLine } from '../../src/cli/serve.ts';
import { describeEachDatabase, type TestAccount, type TestResponse } from '../helpers/harness.ts';

function assertHttpsRequired(res: TestResponse) {
  assert.equal(res.status, 403, res.raw.slice(0, 300));
  assert.equal(res.body.error.code, 'https_required');
  assert.match(res.body.error.request_id, /^req_/);
  assert.equal(res.headers['x-request-id'], res.body.error.request_id);
}

// Behind a TLS-terminating proxy the app listens in plain HTTP and must refuse what the proxy did
// not receive over HTTPS (decisions §3). inject() requests are plain HTTP, like the proxy's hop.
describeEachDatabase(
  'trusted-proxy mode requires X-Forwarded-Proto: https',
  (h) => {
    let acc: TestAccount;
    before(async () => {
      acc = await h.account('enterprise');
    });
    const https = { 'x-forwarded-proto': 'https' };

    it("answers the request ads serve prints to try (its headers as the line gives them), where the line without the proxy's header is refused", async () => {
      const headersOf = (line: string) =>
        Object.fromEntries(
          [...line.matchAll(/-H "([^:]+): ([^"]+)"/g)].map((m) => [m[1]!.toLowerCase(), m[2]!]),
        );
      const printed = await h.app.inject({
        method: 'GET',
        url: '/v1/data',
        headers: headersOf(tryLine('http://127.0.0.1:8080', acc.adminKey, true)),
      });
      assert.equal(printed.statusCode, 200, printed.body);
      const direct = await h.app.inject({
        method: 'GET',
        url: '/v1/data',
        headers: headersOf(tryLine('http://127.0.0.1:8080', acc.adminKey, false)),
      });
      assert.equal(direct.statusCode, 403);
    });

    it('refuses a request without X-Forwarded-Proto with 403 https_required, before auth', async () => {
      assertHttpsRequired(await h.request('GET', '/v1/data', { key: acc.adminKey }));
      assertHttpsRequired(await h.request('GET', '/v1/data'));
      assertHttpsRequired(
        await h.request('POST', '/v1/data', { key: acc.adminKey, body: { title: 'plain', type: 'note' } }),
      );
      assertHttpsRequired(await h.request('GET', '/v1/nope'));
    });

    it('refuses X-Forwarded-Proto other than https', async () => {
      for (const proto of ['http', 'ws', '', 'httpsx']) {
        assertHttpsRequired(
          await h.request('GET', '/v1/data', { key: acc.adminKey, headers: { 'x-forwarded-proto': proto } }),
        );
      }
    });

    it('stores nothing from a refused request', async () => {
      const res = await h.request('POST', '/v1/data', {
        key: acc.adminKey,
        body: { title: 'over plain http', type: 'note' },
      });
      assertHttpsRequired(res);
      const rows = await h.database.db
        .selectFrom('data_objects')
        .select('id')
        .where('title', '=', 'over plain http')
        .execute();
      assert.deepEqual(rows, []);
    });

    it('serves a request the proxy received over HTTPS (any letter case)', async () => {
      const created = await h.request('POST', '/v1/data', {
        key: acc.adminKey,
        headers: https,
        body: { title: 'via proxy', type: 'note' },
      });
      assert.equal(created.status, 201);
      const list = await h.request('GET', '/v1/data', {
        key: acc.adminKey,
        headers: { 'x-forwarded-proto': 'HTTPS' },
      });
      assert.equal(list.status, 200);
      assert.equal(list.body.data.total, 1);
    });

    it('still authenticates requests that came over HTTPS', async () => {
      const res = await h.request('GET', '/v1/data', { headers: https });
      assert.equal(res.status, 401);
      assert.equal(res.body.error.code, 'unauthorized');
    });

    it('trusts the entry the nearest proxy appended, not one the client forged before it', async () => {
      // A proxy that appends (rather than overwrites) turns a client's forged "https" into
      // "https, http"; the last entry is the proxy's own and the request came over plain HTTP.
      assertHttpsRequired(
        await h.request('GET', '/v1/data', {
          key: acc.adminKey,
          headers: { 'x-forwarded-proto': 'https, http' },
        }),
      );
      const res = await h.request('GET', '/v1/data', {
        key: acc.adminKey,
        headers: { 'x-forwarded-proto': 'http, https' },
      });
      assert.equal(res.status, 200);
    });

    it('leaves the health probes open for the load balancer', async () => {
      // Also spelled with percent escapes, which the router decodes to the same route.
      for (const path of ['/healthz', '/readyz', '/healthz?probe=1', '/health%7A', '/%72eadyz']) {
        const res = await h.request('GET', path);
        assert.equal(res.status, 200, path);
        assert.equal(res.body.status, 'ok');
      }
      // And the metrics, for a scraper inside the network.
      for (const path of ['/metrics', '/metric%73']) {
        const metrics = await h.request('GET', path);
        assert.equal(metrics.status, 200, path);
        assert.match(metrics.raw, /^# TYPE ads_http_requests_total counter$/m);
      }
    });
  },
  { env: { ADS_TRUST_PROXY: 'true' } },
);

describeEachDatabase('without trusted-proxy mode X-Forwarded-Proto is irrelevant', (h) => {
  it('serves plain inject() requests with or without the header (TLS is the server’s job)', async () => {
    const acc = await h.account('enterprise');
    for (const headers of [{}, { 'x-forwarded-proto': 'http' }] as Record<string, string>[]) {
      const res = await h.request('GET', '/v1/data', { key: acc.adminKey, headers });
      assert.equal(res.status, 200);
    }
  });
});

describeEachDatabase(
  'trusted-proxy mode throttles failed authentications by the address the proxy saw',
  (h) => {
    /** Four bad keys through the proxy (socket address 127.0.0.1) with the given X-Forwarded-For. */
    const guess = async (forwardedFor: (i: number) => string) => {
      const statuses: number[] = [];
      for (let i = 1; i <= 4; i++) {
        const res = await h.app.inject({
          method: 'GET',
          url: '/v1/data',
          remoteAddress: '127.0.0.1',
          headers: {
            'x-forwarded-proto': 'https',
            'x-forwarded-for': forwardedFor(i),
            authorization: `Bearer ads_${'A'.repeat(42)}${i}`,
          },
        });
        statuses.push(res.statusCode);
      }
      return statuses;
    };

    it('throttles the client address the proxy reports', async () => {
      assert.deepEqual(await guess(() => '198.51.100.1'), [401, 401, 401, 429]);
    });

    it('is not fooled by X-Forwarded-For entries a client forges ahead of the proxy’s own', async () => {
      // The proxy appends the real client, 203.0.113.7, after whatever the client sent; a guesser
      // rotating a forged first entry must still be throttled as one address.
      assert.deepEqual(await guess((i) => `10.9.9.${i}, 203.0.113.7`), [401, 401, 401, 429]);
    });
  },
  { env: { ADS_TRUST_PROXY: 'true', ADS_AUTH_FAILURES_PER_MINUTE: '3' } },
);
