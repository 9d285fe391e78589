// Issue 10, point 3: requests generated from the OpenAPI document the app serves, for every
// operation, valid and corrupted. Oracle: no 5xx, every response matches the document, the server
// is healthy afterwards. Short form in `npm test`; ADS_RELIABILITY_LONG=1 sends 100,000 per database.
import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import fc from 'fast-check';
import { assertContract } from '../helpers/contract.ts';
import { describeEachDatabase, type Harness, type TestAccount } from '../helpers/harness.ts';
import {
  documentOf,
  documentOperations,
  type FuzzOperation,
  type FuzzRequest,
  type Hints,
  IdPool,
  requestBuilder,
} from '../helpers/openapi-fuzz.ts';

const LONG = process.env.ADS_RELIABILITY_LONG === '1';
const RUNS = Number(process.env.ADS_FUZZ_RUNS ?? (LONG ? 100_000 : 1_500));
const SEED = Number(process.env.ADS_FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));

const WORDS = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'finance', 'report', 'café', 'naïve'];
const word = fc.constantFrom(...WORDS);
const text = fc.array(word, { minLength: 1, maxLength: 6 }).map((w) => w.join(' '));
let emails = 0;

/** Values that get past the semantic checks often enough to reach the handlers' success paths. */
const HINTS: Hints = {
  title: text,
  content: text,
  tags: fc.uniqueArray(word, { maxLength: 3 }),
  q: fc.oneof(
    text,
    fc.constantFrom(
      'alpha OR bravo',
      'fin*',
      '"finance report"',
      'title:alpha',
      'alpha -bravo',
      '(a OR b) c',
    ),
  ),
  filter: fc.array(fc.constantFrom('type:note', 'tag:alpha', 'status:open', 'author:ada', 'metadata.k:v'), {
    maxLength: 2,
  }),
  from: fc.constantFrom('2020-01-01', '2020-01-01T00:00:00Z', '2099-12-31T23:59:59+02:00'),
  to: fc.constantFrom('2099-12-31', '2099-12-31T00:00:00.000Z'),
  // A closed local port: the webhook test ping and deliveries fail fast and nothing leaves the host.
  url: fc.constantFrom('https://127.0.0.1:9/hook', 'https://[::1]:9/hook', 'https://localhost:9/hook'),
  events: fc.constantFrom(['*'], ['data.created'], ['data.updated', 'user.deleted']),
  email: fc.nat().map((n) => `fuzz-${n}-${++emails}@example.com`),
};

interface Stats {
  requests: number;
  corrupted: number;
  fiveXX: number;
  violations: number;
  statuses: Record<string, number>;
  /** Per operation: requests, and how many were answered 2xx. */
  perOp: Map<string, { n: number; ok: number; ms: number }>;
  /** Distinct problems (first line of the oracle's complaint) with a count and one example each. */
  problems: Map<string, { count: number; example: string }>;
}

function describeRequest(r: FuzzRequest) {
  const body = r.payload === undefined ? '' : ` body ${JSON.stringify(r.payload.slice(0, 200))}`;
  return `${r.method} ${r.url.slice(0, 200)} [${r.corruptions.join(',') || 'valid'}] headers ${JSON.stringify(
    r.headers,
  ).slice(0, 200)}${body}`;
}

/** Sends one generated request in-process and records what the oracle thinks of the answer. */
async function send(h: Harness, r: FuzzRequest, stats: Stats, pool: IdPool) {
  const t0 = performance.now();
  const res = await h.app.inject({
    method: r.method as 'GET',
    url: r.url,
    headers: r.headers,
    payload: r.payload,
  });
  stats.requests++;
  if (r.corruptions.length > 0) stats.corrupted++;
  stats.statuses[res.statusCode] = (stats.statuses[res.statusCode] ?? 0) + 1;
  const op = stats.perOp.get(r.op) ?? { n: 0, ok: 0, ms: 0 };
  op.n++;
  op.ms += performance.now() - t0;
  if (res.statusCode < 300 && r.method !== 'HEAD' && r.method !== 'OPTIONS') op.ok++;
  stats.perOp.set(r.op, op);
  const note = (what: string) => {
    const kind = what
      .split('\n')
      .slice(0, 2)
      .join(' ')
      .replace(/req_\w+/g, 'req_…');
    const seen = stats.problems.get(kind);
    if (seen) seen.count++;
    else
      stats.problems.set(kind, {
        count: 1,
        example: `${what.slice(0, 600)}\n    request: ${describeRequest(r)}`,
      });
  };
  if (res.statusCode >= 500) {
    stats.fiveXX++;
    note(`${res.statusCode}: ${res.body.slice(0, 300)}`);
  }
  try {
    assertContract(h.app, {
      method: r.method,
      // Dot segments are resolved as an HTTP client would before sending (RFC 3986 §5.2.4).
      url: new URL(r.url, 'http://localhost').pathname,
      status: res.statusCode,
      headers: res.headers,
      raw: res.body,
    });
  } catch (err) {
    stats.violations++;
    note(String((err as Error).message));
  }
  // New resources become targets for later requests.
  if (res.statusCode === 201 && r.method === 'POST') {
    const id = (JSON.parse(res.body) as { data?: { id?: string } }).data?.id;
    if (id) pool.add(id);
  }
}

describeEachDatabase(
  'OpenAPI fuzzing: requests generated from the document',
  (h) => {
    let acc: TestAccount;
    let ops: FuzzOperation[];
    const pool = new IdPool();
    const principals: Record<string, string | null> = {};

    before(async () => {
      acc = await h.account('enterprise');
      const other = await h.account('enterprise');
      const reader = await acc.user('member', ['read']);
      const revoked = await acc.user('member', ['read', 'write']);
      const del = await h.request('DELETE', `/v1/api-keys/${revoked.keyId}`, { key: revoked.key });
      assert.equal(del.status, 204);
      // The main caller first; the others get a share of the requests each.
      Object.assign(principals, {
        admin: acc.adminKey,
        reader: reader.key,
        none: null,
        garbage: 'ads_0000000000000000000000000000000000000000000',
        revoked: revoked.key,
        otherAccount: other.adminKey,
      });
      // Targets for every kind of path id: data, invited users, keys, a webhook with deliveries.
      const key = acc.adminKey;
      const hook = await h.request('POST', '/v1/webhooks', {
        key,
        body: { url: 'https://127.0.0.1:9/seed', events: ['*'] },
      });
      assert.equal(hook.status, 201, hook.raw);
      // The deliveries' webhook stays out of the pool, so no generated DELETE or PATCH disables it.
      // Data objects are the most deleted targets: enough of them that generated DELETEs leave
      // some for the reads (with 3, a seed could delete them all before any read of one).
      for (let i = 0; i < 12; i++) {
        const d = await h.request('POST', '/v1/data', {
          key,
          body: { title: `seed ${WORDS[i % WORDS.length]} ${i}`, type: 'note' },
        });
        pool.add(d.body.data.id);
      }
      for (let i = 0; i < 3; i++) {
        const u = await h.request('POST', '/v1/users', {
          key,
          body: { email: `seed-${i}@example.com`, role: 'member' },
        });
        pool.add(u.body.data.id);
        const k = await h.request('POST', '/v1/api-keys', { key, body: { scopes: ['read'] } });
        pool.add(k.body.data.id);
      }
      // Webhooks generated requests may change and delete (generated POSTs add more, but DELETEs
      // can remove those before a PATCH finds one).
      for (let i = 0; i < 3; i++) {
        const w = await h.request('POST', '/v1/webhooks', {
          key,
          body: { url: `https://127.0.0.1:9/pool-${i}`, events: ['user.deleted'] },
        });
        assert.equal(w.status, 201, w.raw);
        pool.add(w.body.data.id);
      }
      const deliveries = await h.request('GET', `/v1/webhooks/${hook.body.data.id}/deliveries`, { key });
      pool.kept.add(hook.body.data.id);
      for (const d of deliveries.body.data.deliveries) {
        pool.add(d.id);
        pool.deliveries.push({ webhook: hook.body.data.id, delivery: d.id });
      }
      assert.ok(pool.deliveries.length > 0);
      // Also another account's ids: they must be answered like missing ones.
      const theirs = await h.request('POST', '/v1/data', {
        key: other.adminKey,
        body: { title: 'x', type: 'note' },
      });
      pool.add(theirs.body.data.id);
      ops = documentOperations(documentOf(h.app));
    });

    it(`${RUNS} generated requests over every operation: 0 5xx, 0 responses outside the document`, async (t) => {
      const builder = requestBuilder(documentOf(h.app), HINTS, principals, pool);
      const unknownPaths = fc
        .constantFrom(
          '/',
          '/v1',
          '/v1/',
          '/v2/data',
          '/v1/nope',
          '/v1/data/x/y/z',
          '/metrics',
          '/.env',
          '/v1/../etc/passwd',
        )
        .map(
          (url): FuzzRequest => ({
            method: 'GET',
            url,
            headers: {},
            op: 'unknown',
            corruptions: ['unknown-path'],
          }),
        );
      const anyRequest = fc.oneof(
        { weight: 30, arbitrary: fc.constantFrom(...ops).chain((op) => builder.request(op)) },
        { weight: 1, arbitrary: unknownPaths },
      );
      const stats: Stats = {
        requests: 0,
        corrupted: 0,
        fiveXX: 0,
        violations: 0,
        statuses: {},
        perOp: new Map(),
        problems: new Map(),
      };
      const started = Date.now();
      await fc.assert(
        fc.asyncProperty(anyRequest, async (r) => send(h, r, stats, pool)),
        { numRuns: RUNS, seed: SEED, endOnFailure: true },
      );
      if (process.env.ADS_FUZZ_PROFILE) {
        const slow = [...stats.perOp].sort((a, b) => b[1].ms - a[1].ms).slice(0, 8);
        t.diagnostic(`slowest: ${slow.map(([o, v]) => `${o} ${v.n} req ${Math.round(v.ms)} ms`).join('; ')}`);
      }
      const seconds = ((Date.now() - started) / 1000).toFixed(1);
      t.diagnostic(
        `seed ${SEED}: ${stats.requests} requests (${stats.corrupted} corrupted) in ${seconds} s; ` +
          `5xx ${stats.fiveXX}; contract violations ${stats.violations}; statuses ${JSON.stringify(stats.statuses)}`,
      );
      const documented = ops.map((o) => `${o.method} ${o.template}`);
      const reached = documented.filter((o) => (stats.perOp.get(o)?.ok ?? 0) > 0);
      const notReached = documented.filter(
        (o) => !reached.includes(o) && o !== 'POST /v1/invitations/accept',
      );
      t.diagnostic(
        `operations answered 2xx at least once: ${reached.length} of ${documented.length}` +
          (notReached.length ? ` (not: ${notReached.join(', ')})` : ''),
      );
      const problems = [...stats.problems.values()]
        .sort((a, b) => b.count - a.count)
        .slice(0, 15)
        .map((p) => `(${p.count}x) ${p.example}`)
        .join('\n  ');
      for (const [kind, p] of stats.problems) t.diagnostic(`problem (${p.count}x): ${kind.slice(0, 300)}`);
      assert.equal(stats.fiveXX, 0, `5xx answers (seed ${SEED}):\n  ${problems}`);
      assert.equal(stats.violations, 0, `responses outside the document (seed ${SEED}):\n  ${problems}`);
      // Every operation was exercised, and every one but accepting an invitation (whose token only
      // the email holds) reached its success path: the generators do reach the handlers.
      for (const o of documented) assert.ok(stats.perOp.has(o), `never generated: ${o}`);
      assert.deepEqual(notReached, [], 'operations never answered 2xx');
    });

    it('is healthy afterwards: probes ok, a normal create, read and search work', async () => {
      assert.equal((await h.request('GET', '/healthz')).status, 200);
      assert.equal((await h.request('GET', '/readyz')).status, 200);
      const created = await h.request('POST', '/v1/data', {
        key: acc.adminKey,
        body: { title: 'after the storm', type: 'note', content: 'zyzzyvafuzzmarker' },
      });
      assert.equal(created.status, 201, created.raw);
      const got = await h.request('GET', `/v1/data/${created.body.data.id}`, { key: acc.adminKey });
      assert.equal(got.status, 200);
      const found = await h.request('GET', '/v1/search?q=zyzzyvafuzzmarker', { key: acc.adminKey });
      assert.equal(found.status, 200);
      assert.equal(found.body.data.total, 1);
    });
  },
  {
    env: {
      ADS_BODY_LIMIT: String(256 * 1024),
      ADS_AUTH_FAILURES_PER_MINUTE: '10000000',
      ADS_WEBHOOK_ALLOW_PRIVATE: 'true',
      ADS_WEBHOOK_TIMEOUT_MS: '2000',
    },
  },
);
