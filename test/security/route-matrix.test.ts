import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { before, describe, it } from 'node:test';
import {
  describeEachDatabase,
  type Harness,
  type TestAccount,
  type TestResponse,
} from '../helpers/harness.ts';
import { registeredRoutes, routeShape } from '../helpers/route-table.ts';

type Scope = 'read' | 'write' | 'admin';
const SCOPES: Scope[] = ['read', 'write', 'admin'];

interface Resource {
  id: string;
  /** Asserts the resource is still there and unchanged (after another account tried to touch it). */
  intact(): Promise<void>;
}

/**
 * Makes a fresh resource of `acc`; one entry per `{placeholder}` used in ROUTES. `ids` holds the
 * placeholders to its left in the same path (a delivery belongs to the webhook before it).
 */
const RESOURCES: Record<
  string,
  (h: Harness, acc: TestAccount, ids: Record<string, string>) => Promise<Resource>
> = {
  data: async (h, acc) => {
    const res = await h.request('POST', '/v1/data', {
      key: acc.adminKey,
      body: { title: 'matrix', type: 'note', content: 'c' },
    });
    assert.equal(res.status, 201);
    const id: string = res.body.data.id;
    return {
      id,
      intact: async () => {
        const got = await h.request('GET', `/v1/data/${id}`, { key: acc.adminKey });
        assert.equal(got.status, 200);
        assert.deepEqual(got.body.data, res.body.data);
      },
    };
  },
  user: async (h, acc) => {
    const email = `matrix-${randomBytes(4).toString('hex')}@example.com`;
    const res = await h.request('POST', '/v1/users', { key: acc.adminKey, body: { email, role: 'member' } });
    assert.equal(res.status, 201, res.raw.slice(0, 300));
    const id: string = res.body.data.id;
    return {
      id,
      intact: async () => {
        const list = await h.request('GET', '/v1/users?limit=100', { key: acc.adminKey });
        const user = list.body.data.users.find((u: { id: string }) => u.id === id);
        assert.equal(user?.role, 'member');
      },
    };
  },
  webhook: async (h, acc) => {
    const body = { url: 'https://127.0.0.1:9/matrix', events: ['*'] };
    const res = await h.request('POST', '/v1/webhooks', { key: acc.adminKey, body });
    assert.equal(res.status, 201, res.raw.slice(0, 300));
    const id: string = res.body.data.id;
    return {
      id,
      intact: async () => {
        const got = await h.request('GET', `/v1/webhooks/${id}`, { key: acc.adminKey });
        assert.equal(got.status, 200);
        assert.deepEqual(got.body.data, res.body.data);
      },
    };
  },
  delivery: async (h, acc, ids) => {
    // Any event of the account queues a delivery to its webhook in the same transaction.
    await RESOURCES.data?.(h, acc, ids);
    const list = await h.request('GET', `/v1/webhooks/${ids.webhook}/deliveries`, { key: acc.adminKey });
    assert.equal(list.status, 200, list.raw.slice(0, 300));
    const first = list.body.data.deliveries[0];
    assert.ok(first, 'a delivery was queued');
    return {
      id: first.id,
      intact: async () => {
        const again = await h.request('GET', `/v1/webhooks/${ids.webhook}/deliveries`, { key: acc.adminKey });
        const same = again.body.data.deliveries.find((d: { id: string }) => d.id === first.id);
        assert.deepEqual(same?.attempts, first.attempts, 'no attempt was made for another account');
      },
    };
  },
  apiKey: async (h, acc) => {
    const user = await acc.user('member', ['read']);
    return {
      id: user.keyId,
      intact: async () => assert.equal((await h.request('GET', '/v1/data', { key: user.key })).status, 200),
    };
  },
};

interface Route {
  method: string;
  path: string;
  /** The scope the route needs; `any` = any valid key (decisions §3). */
  scope: Scope | 'any';
  body?: unknown;
}

// Every authenticated /v1 route. A new route is one line here; a new kind of `{id}` is one entry in
// RESOURCES. The completeness test fails for a registered route that is in neither table.
const ROUTES: Route[] = [
  { method: 'GET', path: '/v1/account', scope: 'read' },
  { method: 'GET', path: '/v1/data', scope: 'read' },
  { method: 'POST', path: '/v1/data', scope: 'write', body: { title: 'matrix', type: 'note' } },
  { method: 'GET', path: '/v1/data/{data}', scope: 'read' },
  { method: 'PATCH', path: '/v1/data/{data}', scope: 'write', body: { title: 'patched' } },
  { method: 'DELETE', path: '/v1/data/{data}', scope: 'write' },
  { method: 'GET', path: '/v1/items/{data}', scope: 'read' },
  { method: 'GET', path: '/v1/api-keys', scope: 'read' },
  { method: 'POST', path: '/v1/api-keys', scope: 'any', body: { scopes: ['read'] } },
  { method: 'DELETE', path: '/v1/api-keys/{apiKey}', scope: 'any' },
  { method: 'GET', path: '/v1/search?q=matrix', scope: 'read' },
  { method: 'GET', path: '/v1/users', scope: 'read' },
  { method: 'POST', path: '/v1/users', scope: 'admin', body: { email: 'new@example.com', role: 'member' } },
  { method: 'PATCH', path: '/v1/users/{user}', scope: 'admin', body: { role: 'admin' } },
  { method: 'DELETE', path: '/v1/users/{user}', scope: 'admin' },
  { method: 'POST', path: '/v1/users/{user}/invitation', scope: 'admin' },
  { method: 'GET', path: '/v1/webhooks', scope: 'read' },
  {
    method: 'POST',
    path: '/v1/webhooks',
    scope: 'write',
    body: { url: 'https://127.0.0.1:9/new', events: ['*'] },
  },
  { method: 'GET', path: '/v1/webhooks/{webhook}', scope: 'read' },
  { method: 'PATCH', path: '/v1/webhooks/{webhook}', scope: 'write', body: { events: ['data.created'] } },
  { method: 'DELETE', path: '/v1/webhooks/{webhook}', scope: 'write' },
  { method: 'GET', path: '/v1/webhooks/{webhook}/deliveries', scope: 'read' },
  { method: 'POST', path: '/v1/webhooks/{webhook}/test', scope: 'write' },
  { method: 'POST', path: '/v1/webhooks/{webhook}/deliveries/{delivery}/retry', scope: 'write' },
];

/** Routes that take no key, with a request that must not be answered 401. */
const PUBLIC: Route[] = [
  { method: 'GET', path: '/healthz', scope: 'any' },
  { method: 'GET', path: '/readyz', scope: 'any' },
  { method: 'GET', path: '/metrics', scope: 'any' },
  { method: 'GET', path: '/v1/openapi.json', scope: 'any' },
  { method: 'GET', path: '/v1/invitations/accept', scope: 'any' },
  { method: 'POST', path: '/v1/invitations/accept', scope: 'any', body: { token: 'adsinv_unknown' } },
];

/** The route's path with each placeholder replaced by a fresh resource of `acc`. */
async function resolve(h: Harness, acc: TestAccount, path: string) {
  let out = path;
  const resources: Resource[] = [];
  const ids: Record<string, string> = {};
  for (const [, name = ''] of path.matchAll(/\{(\w+)\}/g)) {
    const make = RESOURCES[name];
    assert.ok(make, `no RESOURCES entry for {${name}}`);
    const resource = await make(h, acc, ids);
    resources.push(resource);
    ids[name] = resource.id;
    out = out.replace(`{${name}}`, resource.id);
  }
  return { path: out, resources };
}

function assertCode(res: TestResponse, status: number, code: string, label: string) {
  assert.equal(res.status, status, `${label}: ${res.raw.slice(0, 300)}`);
  assert.equal(res.body.error.code, code, label);
  assert.equal(res.headers['x-request-id'], res.body.error.request_id, label);
  if (status === 401) assert.match(String(res.headers['www-authenticate']), /^Bearer\b/, label);
}

describeEachDatabase(
  'security matrix: every /v1 route',
  (h) => {
    let acc: TestAccount;
    let other: TestAccount;
    let revokedKey: string;
    /** Per scope, an admin's key holding every scope but that one (so the role is never the cause). */
    const lacking: Partial<Record<Scope, string>> = {};
    before(async () => {
      acc = await h.account('enterprise');
      other = await h.account('enterprise');
      const revoked = await acc.user('admin', [...SCOPES]);
      const del = await h.request('DELETE', `/v1/api-keys/${revoked.keyId}`, { key: revoked.key });
      assert.equal(del.status, 204);
      revokedKey = revoked.key;
      for (const scope of SCOPES) {
        const user = await acc.user(
          'admin',
          SCOPES.filter((s) => s !== scope),
        );
        lacking[scope] = user.key;
      }
    });

    it('covers every registered route: each is in ROUTES or PUBLIC', () => {
      const known = new Set([...ROUTES, ...PUBLIC].map((r) => routeShape(`${r.method} ${r.path}`)));
      const registered = registeredRoutes(h.app);
      assert.ok(registered.length >= ROUTES.length, `parsed ${registered.length} routes`);
      // The reference page's own assets (/docs/*) are static files of @fastify/swagger-ui.
      const missing = registered.filter(
        (r) => !known.has(routeShape(r)) && !r.split(' ')[1]?.startsWith('/docs'),
      );
      assert.deepEqual(missing, [], 'add a line to ROUTES (or PUBLIC) for each of these');
    });

    for (const route of PUBLIC) {
      it(`${route.method} ${route.path} is public: no key is not 401`, async () => {
        const res = await h.request(route.method, route.path, { body: route.body });
        assert.notEqual(res.status, 401, res.raw.slice(0, 300));
        assert.ok(res.status < 500);
      });
    }

    for (const route of ROUTES) {
      const name = `${route.method} ${route.path}`;
      describe(name, () => {
        const send = (path: string, key?: string) => h.request(route.method, path, { key, body: route.body });

        it('works with a key holding the needed scope (the route exists)', async () => {
          const res = await send((await resolve(h, acc, route.path)).path, acc.adminKey);
          assert.ok(res.status >= 200 && res.status < 300, `${name}: ${res.status} ${res.raw.slice(0, 300)}`);
        });

        it('answers no key with 401 before looking at the path or body', async () => {
          assertCode(await send((await resolve(h, acc, route.path)).path), 401, 'unauthorized', name);
          const malformed = route.path.replace(/\{\w+\}/g, 'malformed-id');
          assertCode(await send(malformed), 401, 'unauthorized', `${name} (malformed id)`);
        });

        it('answers a revoked key with 401', async () => {
          assertCode(
            await send((await resolve(h, acc, route.path)).path, revokedKey),
            401,
            'unauthorized',
            name,
          );
        });

        // Rows where the check cannot apply register no test, rather than a skipped one.
        const needed = route.scope;
        if (needed !== 'any') {
          it(`answers a key lacking '${needed}' with 403`, async () => {
            const key = lacking[needed];
            assert.ok(key);
            assertCode(await send((await resolve(h, acc, route.path)).path, key), 403, 'forbidden', name);
          });
        }

        if (route.path.includes('{')) {
          it("answers another account's resource id with 404 and leaves it untouched", async () => {
            const theirs = await resolve(h, other, route.path);
            assertCode(await send(theirs.path, acc.adminKey), 404, 'not_found', name);
            for (const resource of theirs.resources) await resource.intact();
          });
        }
      });
    }
  },
  // The matrix fails authentication many times from one address on purpose; webhook targets are
  // a closed local port, so nothing leaves the machine.
  { env: { ADS_AUTH_FAILURES_PER_MINUTE: '100000', ADS_WEBHOOK_ALLOW_PRIVATE: 'true' } },
);
