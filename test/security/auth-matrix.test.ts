// Issue 10, point 4: the authorization matrix. Seven principals x every operation of the OpenAPI
// document (and every other registered route), each cell against an explicit expected status
// (decisions §3: scopes capped by the role, evaluated on every request). A route without a row
// fails the suite. test/security/route-matrix.test.ts checks the error bodies route by route;
// this file is the full table with a mismatch count.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { before, it } from 'node:test';
import { describeEachDatabase, type TestAccount } from '../helpers/harness.ts';
import { documentOf, documentOperations, type FuzzOperation, idPrefix } from '../helpers/openapi-fuzz.ts';
import { registeredRoutes, routeShape } from '../helpers/route-table.ts';

const PRINCIPALS = [
  'none',
  'garbage',
  'read',
  'write',
  'admin',
  'revoked',
  'downgraded',
  'downgradedAdminKey',
] as const;
type Principal = (typeof PRINCIPALS)[number];

/**
 * What each principal is:
 * - none: no Authorization header; garbage: well-formed-looking keys nobody issued, and junk.
 * - read: a member's key with `read`; write: a member's key with `read`, `write`.
 * - admin: an admin's key with all three scopes; revoked: such a key, revoked.
 * - downgraded: an admin's key with all three scopes, the user then demoted to member through
 *   PATCH /v1/users/{id}: effective scopes read, write.
 * - downgradedAdminKey: an admin's key with only `admin`, the user then demoted: effective none.
 */
type Row = Record<Principal, number>;

const row = (success: number, need: 'read' | 'write' | 'admin' | 'any'): Row => {
  // Effective scopes per principal (decisions §3: key scopes ∩ role scopes).
  const has: Record<string, string[]> = {
    read: ['read'],
    write: ['read', 'write'],
    admin: ['read', 'write', 'admin'],
    downgraded: ['read', 'write'],
    downgradedAdminKey: [],
  };
  const cell = (p: string) => (need === 'any' || has[p]?.includes(need) ? success : 403);
  return {
    none: 401,
    garbage: 401,
    revoked: 401,
    read: cell('read'),
    write: cell('write'),
    admin: cell('admin'),
    downgraded: cell('downgraded'),
    downgradedAdminKey: cell('downgradedAdminKey'),
  };
};
const everyone = (status: number): Row =>
  Object.fromEntries(PRINCIPALS.map((p) => [p, status])) as unknown as Row;

/**
 * The expected table, written out from decisions §3 (not read from the code). Keys are the
 * document's `METHOD path`; undocumented routes use Fastify's path.
 */
const EXPECTED: Record<string, Row> = {
  'GET /healthz': everyone(200),
  'GET /readyz': everyone(200),
  'GET /metrics': everyone(200),
  'GET /v1/openapi.json': everyone(200),
  'GET /v1/invitations/accept': everyone(200),
  'GET /docs': everyone(200),
  'GET /docs/': everyone(200),
  'GET /docs/json': everyone(200),
  'GET /docs/yaml': everyone(200),
  'GET /docs/static/index.html': everyone(302),
  'GET /docs/static/swagger-initializer.js': everyone(200),
  'GET /docs/*': everyone(200),
  // An unknown token: 400 invalid_token whoever asks (the route takes no key).
  'POST /v1/invitations/accept': everyone(400),
  'GET /v1/account': row(200, 'read'),
  'GET /v1/data': row(200, 'read'),
  'POST /v1/data': row(201, 'write'),
  'GET /v1/data/{id}': row(200, 'read'),
  'PATCH /v1/data/{id}': row(200, 'write'),
  'DELETE /v1/data/{id}': row(204, 'write'),
  'GET /v1/items/{id}': row(200, 'read'),
  'GET /v1/search': row(200, 'read'),
  'GET /v1/api-keys': row(200, 'read'),
  // Any valid key, but the new key's scopes (`read`) must be within the caller's effective scopes.
  'POST /v1/api-keys': { ...row(201, 'any'), downgradedAdminKey: 403 },
  // The target is another member's key: only an admin (effective `admin`) may revoke it; for anyone
  // else it does not exist (decisions §3).
  'DELETE /v1/api-keys/{id}': { ...row(404, 'any'), admin: 204 },
  'GET /v1/users': row(200, 'read'),
  'POST /v1/users': row(201, 'admin'),
  'PATCH /v1/users/{id}': row(200, 'admin'),
  'DELETE /v1/users/{id}': row(204, 'admin'),
  'POST /v1/users/{id}/invitation': row(200, 'admin'),
  'GET /v1/webhooks': row(200, 'read'),
  'POST /v1/webhooks': row(201, 'write'),
  'GET /v1/webhooks/{id}': row(200, 'read'),
  'PATCH /v1/webhooks/{id}': row(200, 'write'),
  'DELETE /v1/webhooks/{id}': row(204, 'write'),
  'GET /v1/webhooks/{id}/deliveries': row(200, 'read'),
  'POST /v1/webhooks/{id}/test': row(200, 'write'),
  'POST /v1/webhooks/{id}/deliveries/{delivery_id}/retry': row(202, 'write'),
};

/** A body that the operation accepts from a caller allowed to call it. */
function bodyFor(key: string): unknown {
  const unique = randomBytes(4).toString('hex');
  const bodies: Record<string, unknown> = {
    'POST /v1/invitations/accept': { token: 'adsinv_unknown' },
    'POST /v1/data': { title: 'matrix', type: 'note' },
    'PATCH /v1/data/{id}': { title: 'patched' },
    'POST /v1/api-keys': { scopes: ['read'] },
    'POST /v1/users': { email: `matrix-${unique}@example.com`, role: 'member' },
    'PATCH /v1/users/{id}': { role: 'admin' },
    'POST /v1/webhooks': { url: 'https://127.0.0.1:9/matrix', events: ['*'] },
    'PATCH /v1/webhooks/{id}': { events: ['data.created'] },
  };
  return bodies[key];
}

const CODE: Record<number, string> = { 401: 'unauthorized', 403: 'forbidden', 404: 'not_found' };

describeEachDatabase(
  'authorization matrix: principals x every route',
  (h) => {
    let acc: TestAccount;
    const keys: Partial<Record<Principal, string[]>> = {};
    let operations: FuzzOperation[];

    /** Fresh resources of the account for each `{param}`, keyed by the id prefix of its schema. */
    async function resolvePath(op: FuzzOperation): Promise<{ url: string; check: () => Promise<void> }> {
      const key = acc.adminKey;
      const values: Record<string, string> = {};
      const checks: Array<() => Promise<void>> = [];
      let webhook: string | undefined;
      for (const p of op.params.filter((x) => x.in === 'path')) {
        const prefix = idPrefix(p.schema);
        let id: string;
        if (prefix === 'dat_') {
          id = (await h.request('POST', '/v1/data', { key, body: { title: 'm', type: 'note' } })).body.data
            .id;
          checks.push(async () =>
            assert.equal((await h.request('GET', `/v1/data/${id}`, { key })).status, 200),
          );
        } else if (prefix === 'usr_') {
          const body = { email: `m-${randomBytes(4).toString('hex')}@example.com`, role: 'member' };
          id = (await h.request('POST', '/v1/users', { key, body })).body.data.id;
          checks.push(async () => {
            const list = await h.request('GET', '/v1/users?limit=100', { key });
            assert.ok(
              list.body.data.users.some((u: { id: string }) => u.id === id),
              'user still there',
            );
          });
        } else if (prefix === 'wh_') {
          const body = { url: 'https://127.0.0.1:9/matrix', events: ['*'] };
          id = (await h.request('POST', '/v1/webhooks', { key, body })).body.data.id;
          webhook = id;
          checks.push(async () =>
            assert.equal((await h.request('GET', `/v1/webhooks/${id}`, { key })).status, 200),
          );
        } else if (prefix === 'key_') {
          const other = await acc.user('member', ['read']);
          id = other.keyId;
          checks.push(async () =>
            assert.equal((await h.request('GET', '/v1/data', { key: other.key })).status, 200),
          );
        } else if (prefix === 'whd_') {
          assert.ok(webhook, 'a delivery id follows its webhook id');
          await h.request('POST', '/v1/data', { key, body: { title: 'event', type: 'note' } });
          const list = await h.request('GET', `/v1/webhooks/${webhook}/deliveries`, { key });
          id = list.body.data.deliveries[0].id;
        } else {
          assert.fail(`no resource factory for {${p.name}} of ${op.method} ${op.template}`);
        }
        values[p.name] = id;
      }
      let url = op.template.replace(/\{(\w+)\}/g, (_, n: string) => values[n]!);
      const required = op.params.filter((p) => p.in === 'query' && p.required);
      if (required.length > 0) url += `?${required.map((p) => `${p.name}=matrix`).join('&')}`;
      return { url, check: async () => Promise.all(checks.map((c) => c())).then(() => undefined) };
    }

    before(async () => {
      acc = await h.account('enterprise');
      const reader = await acc.user('member', ['read']);
      const writer = await acc.user('member', ['read', 'write']);
      const admin = await acc.user('admin', ['read', 'write', 'admin']);
      const revoked = await acc.user('admin', ['read', 'write', 'admin']);
      assert.equal(
        (await h.request('DELETE', `/v1/api-keys/${revoked.keyId}`, { key: revoked.key })).status,
        204,
      );
      const down = await acc.user('admin', ['read', 'write', 'admin']);
      const downAdminOnly = await acc.user('admin', ['admin']);
      for (const u of [down, downAdminOnly]) {
        const res = await h.request('PATCH', `/v1/users/${u.id}`, {
          key: acc.adminKey,
          body: { role: 'member' },
        });
        assert.equal(res.status, 200, res.raw);
      }
      Object.assign(keys, {
        none: [''],
        garbage: [
          'Bearer ads_0000000000000000000000000000000000000000000',
          `Bearer ${reader.key}x`,
          'Bearer not-a-key',
          `Basic ${Buffer.from(`user:${admin.key}`).toString('base64')}`,
          `Bearer ${admin.key.slice(0, -1)}`,
        ],
        read: [`Bearer ${reader.key}`],
        write: [`Bearer ${writer.key}`],
        admin: [`Bearer ${admin.key}`],
        revoked: [`Bearer ${revoked.key}`],
        downgraded: [`Bearer ${down.key}`],
        downgradedAdminKey: [`Bearer ${downAdminOnly.key}`],
      });
      operations = documentOperations(documentOf(h.app));
    });

    it('has an expected row for every documented operation and every registered route', () => {
      const documented = operations.map((o) => `${o.method} ${o.template}`);
      const known = new Set(Object.keys(EXPECTED).map(routeShape));
      const missing = [...documented, ...registeredRoutes(h.app)].filter((r) => !known.has(routeShape(r)));
      assert.deepEqual(missing, [], 'add a row to EXPECTED for each of these');
    });

    it('every principal x every route answers the expected status: 0 mismatches', async (t) => {
      const mismatches: string[] = [];
      let cells = 0;
      let requests = 0;
      const documented = new Map(operations.map((o) => [`${o.method} ${o.template}`, o]));
      for (const [name, expected] of Object.entries(EXPECTED)) {
        const [method = 'GET', template = '/'] = name.split(' ');
        const op: FuzzOperation = documented.get(name) ?? {
          method,
          // Undocumented routes: a concrete path for Fastify's wildcard.
          template: template.replace('*', 'static/swagger-ui.css'),
          scope: undefined,
          params: [],
          body: null,
          responses: [],
        };
        for (const principal of PRINCIPALS) {
          cells++;
          for (const authorization of keys[principal] ?? []) {
            const { url, check } = await resolvePath(op);
            const body = bodyFor(name);
            const headers: Record<string, string> = authorization ? { authorization } : {};
            // h.request checks each response against the OpenAPI document as well.
            const res = await h.request(method, url, { body, headers });
            requests++;
            const want = expected[principal];
            const wantCode = CODE[want];
            const problem =
              res.status !== want
                ? `got ${res.status}`
                : wantCode && res.body?.error?.code !== wantCode
                  ? `code ${res.body?.error?.code}, not ${wantCode}`
                  : null;
            if (problem) {
              mismatches.push(
                `${name} as ${principal} (${authorization.slice(0, 20)}…): want ${want}, ${problem}`,
              );
            }
            // A refused call changed nothing.
            if (res.status >= 400) await check();
          }
        }
      }
      t.diagnostic(
        `${Object.keys(EXPECTED).length} routes x ${PRINCIPALS.length} principals = ${cells} cells, ` +
          `${requests} requests; mismatches ${mismatches.length}`,
      );
      assert.deepEqual(mismatches, []);
    });
  },
  // Failed authentications on purpose, from one address; webhook targets are a closed local port.
  { env: { ADS_AUTH_FAILURES_PER_MINUTE: '100000', ADS_WEBHOOK_ALLOW_PRIVATE: 'true' } },
);
