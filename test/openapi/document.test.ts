import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import Ajv2020Module from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { EVENT_NAMES } from '../../src/events/outbox.ts';
import { createHarness } from '../helpers/harness.ts';

// biome-ignore lint/suspicious/noExplicitAny: the OpenAPI document is untyped JSON.
type Json = Record<string, any>;

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];
const PUBLIC = ['GET /healthz', 'GET /readyz', 'GET /metrics', 'POST /v1/invitations/accept'];
const UNDOCUMENTED = /^\/(v1\/openapi\.json|docs)(\/|$)/;
/** Pages for people, not operations: the invitation email's link (docs/api.md, Members). */
const UNDOCUMENTED_ROUTES = new Set(['GET /v1/invitations/accept']);

/** `METHOD /path/{param}` of every route, read from Fastify's own route tree. */
function registeredRoutes(tree: string): Set<string> {
  const routes = new Set<string>();
  const stack: string[] = [];
  for (const line of tree.split('\n')) {
    const m = /^((?:│ {3}| {4})*)[├└]── (.+?)(?: \(([A-Z, ]+)\))?$/.exec(line);
    if (!m) continue;
    const depth = m[1]!.length / 4;
    stack.length = depth;
    stack.push(m[2]!);
    const path = stack.join('').replace(/:([A-Za-z_]+)/g, '{$1}');
    for (const method of (m[3] ?? '').split(', ').filter((x) => x && x !== 'HEAD')) {
      if (!UNDOCUMENTED.test(path) && !UNDOCUMENTED_ROUTES.has(`${method} ${path}`)) {
        routes.add(`${method} ${path}`);
      }
    }
  }
  return routes;
}

function operations(doc: Json): [string, Json][] {
  return Object.entries(doc.paths as Json).flatMap(([path, item]) =>
    METHODS.filter((m) => item[m]).map((m): [string, Json] => [`${m.toUpperCase()} ${path}`, item[m]]),
  );
}

describe('OpenAPI document', () => {
  const h = createHarness('sqlite');
  let doc: Json;
  before(async () => {
    await h.setup();
    const res = await h.request('GET', '/v1/openapi.json');
    assert.equal(res.status, 200);
    doc = res.body;
  });
  after(() => h.teardown());

  it('is OpenAPI 3.1 with the bearer scheme, and leaves out the document and /docs', () => {
    assert.equal(doc.openapi, '3.1.0');
    assert.deepEqual(doc.components.securitySchemes.bearer, {
      ...doc.components.securitySchemes.bearer,
      type: 'http',
      scheme: 'bearer',
    });
    const paths = Object.keys(doc.paths);
    assert.ok(!paths.some((p) => UNDOCUMENTED.test(p)), paths.join(', '));
  });

  it('describes every registered route, and nothing else', () => {
    const registered = registeredRoutes(h.app.printRoutes({ commonPrefix: false }));
    const documented = new Set(operations(doc).map(([key]) => key));
    assert.ok(registered.size >= 25, `only ${registered.size} routes parsed`);
    assert.deepEqual(
      [...registered].filter((r) => !documented.has(r)),
      [],
      'routes missing from the document',
    );
    assert.deepEqual(
      [...documented].filter((r) => !registered.has(r)),
      [],
      'documented routes that do not exist',
    );
  });

  it('gives every operation an id, a summary, known tags, its security and its error statuses', () => {
    const tags = new Set((doc.tags as Json[]).map((t) => t.name));
    const ids = new Set<string>();
    for (const [key, op] of operations(doc)) {
      assert.ok(op.operationId && !ids.has(op.operationId), `${key}: operationId`);
      ids.add(op.operationId);
      assert.ok(op.summary, `${key}: summary`);
      assert.ok(op.tags?.length && op.tags.every((t: string) => tags.has(t)), `${key}: tags`);
      const statuses = Object.keys(op.responses);
      assert.ok(
        statuses.some((s) => s.startsWith('2')),
        `${key}: a 2xx response`,
      );
      for (const [status, response] of Object.entries(op.responses as Json)) {
        assert.ok(response.description && response.description !== 'Default Response', `${key} ${status}`);
        assert.ok(response.headers?.['X-Request-Id'], `${key} ${status}: X-Request-Id`);
      }
      if (PUBLIC.includes(key)) {
        assert.deepEqual(op.security, [], `${key} is public`);
        continue;
      }
      const scope = op['x-required-scope'];
      assert.ok(['read', 'write', 'admin', 'any'].includes(scope), `${key}: x-required-scope`);
      assert.deepEqual(op.security, [{ bearer: scope === 'any' ? [] : [scope] }], `${key}: security`);
      for (const s of ['400', '401', '403', '429', '500'].filter((x) => x !== '400' || op.requestBody)) {
        assert.ok(statuses.includes(s), `${key}: ${s} response`);
      }
      assert.equal(op.responses['429'].headers['Retry-After'].$ref, '#/components/headers/Retry-After');
      const ok = op.responses[statuses.find((s) => s.startsWith('2'))!];
      for (const header of ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset', 'RateLimit']) {
        assert.ok(ok.headers[header], `${key}: ${header} on success`);
      }
      assert.ok(ok.headers['RateLimit-Policy'], `${key}: RateLimit-Policy on success`);
    }
  });

  it('has a webhooks entry per event with the payload envelope and the signature headers', () => {
    assert.deepEqual(Object.keys(doc.webhooks).sort(), [...EVENT_NAMES, 'webhook.test'].sort());
    for (const [event, item] of Object.entries(doc.webhooks as Json)) {
      const op = item.post;
      const schema = op.requestBody.content['application/json'].schema;
      assert.deepEqual(schema.required, ['id', 'event', 'timestamp', 'account_id', 'data'], event);
      assert.deepEqual(schema.properties.event.enum, [event]);
      const headers = (op.parameters as Json[]).map((p) => p.name);
      for (const name of ['X-Service-Signature', 'webhook-id', 'webhook-timestamp', 'webhook-signature']) {
        assert.ok(headers.includes(name), `${event}: ${name}`);
      }
    }
    // An invitation creates the user, so user.created shows a member still invited (its example too).
    const created = doc.webhooks['user.created'].post.requestBody.content['application/json'];
    assert.deepEqual(created.schema.properties.data.properties.status.enum, ['invited']);
    assert.equal(created.example.data.status, 'invited');
    const deleted = doc.webhooks['user.deleted'].post.requestBody.content['application/json'];
    assert.deepEqual(deleted.schema.properties.data.properties.status.enum, ['invited', 'active']);
  });

  it('describes the webhook.test ping as it is: on demand, not stored, never retried, 410 changes nothing', () => {
    // docs/webhooks.md, "Test ping"; test/webhooks/lifecycle.test.ts proves the behaviour.
    const ping = doc.webhooks['webhook.test'].post;
    assert.match(ping.description, /never retried/);
    assert.match(ping.description, /disabled one too/);
    assert.doesNotMatch(ping.description, /disables the webhook|retried about/);
    assert.equal(ping.responses['410'], undefined);
    const delivery = (ping.parameters as Json[]).find((p) => p.name === 'X-Service-Delivery');
    assert.doesNotMatch(String(delivery?.description), /retries/);
    const created = doc.webhooks['data.created'].post;
    assert.match(created.description, /410 Gone. disables the webhook/);
    assert.ok(created.responses['410']);
  });

  it('shows in its examples what the service answers where the schema alone cannot tell', () => {
    const example = (path: string, method: string, status: string) =>
      doc.paths[path][method].responses[status].content['application/json'].example;
    const accept = doc.paths['/v1/invitations/accept'].post;
    assert.match(accept.requestBody.content['application/json'].example.token, /^adsinv_[A-Za-z0-9_-]{43}$/);
    const accepted = example('/v1/invitations/accept', 'post', '200').data;
    assert.equal(accepted.user.status, 'active');
    assert.deepEqual(accepted.api_key.scopes, ['read', 'write']);
    assert.equal(example('/v1/data', 'post', '201').data.updated_at, null);
    const usage = example('/v1/account', 'get', '200').data.usage;
    assert.deepEqual([usage.minute.limit, usage.day.limit], [60, 10000]);
    assert.equal(usage.minute.used + usage.minute.remaining, usage.minute.limit);
    assert.equal(usage.day.used + usage.day.remaining, usage.day.limit);
    const unready = example('/readyz', 'get', '503');
    assert.deepEqual([unready.status, unready.checks.database], ['unavailable', false]);
    assert.equal(example('/readyz', 'get', '200').status, 'ok');
    for (const status of ['200', '503']) {
      assert.deepEqual(example('/readyz', 'get', status).checks.rate_limiter, {
        backend: 'memory',
        degraded: false,
      });
    }
  });

  it('lists the event names a webhook subscribes to as an enum (the client types them)', () => {
    const body = doc.paths['/v1/webhooks'].post.requestBody.content['application/json'].schema;
    const schema = body.$ref ? doc.components.schemas[body.$ref.split('/').pop()] : body;
    assert.deepEqual(schema.properties.events.items.enum, [...EVENT_NAMES, '*']);
  });

  it("says when X-Request-Id differs from the body's request_id: on an idempotent replay", () => {
    // docs/api.md: a replay is the first answer, body and all (test/http/idempotency.test.ts).
    assert.match(doc.components.headers['X-Request-Id'].description, /except on an idempotent replay/);
  });

  it('has examples that are valid against their own schemas', () => {
    const ajv = new Ajv2020Module.default({ strict: false, validateSchema: false, allErrors: true });
    addFormatsModule.default(ajv);
    ajv.addSchema(doc, 'openapi');
    const ptr = (...parts: (string | number)[]) =>
      parts.map((p) => String(p).replace(/~/g, '~0').replace(/\//g, '~1')).join('/');
    let checked = 0;
    const check = (at: string, value: unknown) => {
      const v = ajv.getSchema(`openapi#/${at}/schema`);
      assert.ok(v, `no schema at ${at}`);
      assert.ok(v(value), `${at}: ${ajv.errorsText(v.errors)} in ${JSON.stringify(value)}`);
      checked++;
    };
    const media = (at: string, m: Json | undefined) => {
      if (!m?.schema) return;
      if (m.example !== undefined) check(at, m.example);
      for (const ex of Object.values((m.examples ?? {}) as Json)) check(at, ex.value);
    };
    for (const section of ['paths', 'webhooks']) {
      for (const [path, item] of Object.entries(doc[section] as Json)) {
        for (const method of METHODS.filter((m) => item[m])) {
          const op = item[method];
          media(
            ptr(section, path, method, 'requestBody', 'content', 'application/json'),
            op.requestBody?.content?.['application/json'],
          );
          (op.parameters ?? []).forEach((p: Json, i: number) => {
            if (p.example !== undefined) check(ptr(section, path, method, 'parameters', i), p.example);
          });
          for (const [s, r] of Object.entries(op.responses as Json)) {
            media(
              ptr(section, path, method, 'responses', s, 'content', 'application/json'),
              r.content?.['application/json'],
            );
          }
        }
      }
    }
    assert.ok(checked > 100, `only ${checked} examples`);
  });

  it('serves the reference page at /docs', async () => {
    const res = await h.request('GET', '/docs');
    assert.equal(res.status, 200);
    assert.match(String(res.headers['content-type']), /^text\/html/);
    assert.match(res.raw, /swagger-ui/i);
  });
});
