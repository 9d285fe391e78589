import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import fc from 'fast-check';
import { isBlank } from '../../src/modules/data/service.ts';
import {
  describeEachDatabase,
  type Harness,
  type TestAccount,
  type TestResponse,
} from '../helpers/harness.ts';

// The closed catalogue of decisions §2, written out here so the test checks the code against the
// contract rather than against itself.
const CATALOGUE: Record<string, number> = {
  invalid_request: 400,
  invalid_json: 400,
  invalid_content_type: 400,
  invalid_query: 400,
  invalid_filter: 400,
  invalid_token: 400,
  unauthorized: 401,
  forbidden: 403,
  https_required: 403,
  not_found: 404,
  method_not_allowed: 405,
  email_taken: 409,
  last_admin: 409,
  idempotency_conflict: 409,
  payload_too_large: 413,
  rate_limited: 429,
  internal_error: 500,
};

// Small enough that the fuzzer's huge strings cross it, large enough for every valid extreme.
const BODY_LIMIT = 65_536;
const RUNS = 400;

const hostileString = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({
    unit: fc.constantFrom('\u0000', '\ud800', '\udfff', '\ud83d', 'a', ' ', '\n', '😀'),
    maxLength: 12,
  }),
  fc.constantFrom(
    '',
    ' ',
    '\t\n',
    '__proto__',
    'constructor',
    'document',
    'x'.repeat(501),
    'y'.repeat(70_000),
  ),
  fc.integer({ min: 0, max: 1100 }).map((n) => 'z'.repeat(n)),
);
const junk = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.array(hostileString, { maxLength: 4 }),
  fc.dictionary(hostileString, fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 }),
);
const hostileBody = fc.record(
  {
    title: fc.oneof(hostileString, junk),
    type: fc.oneof(fc.constantFrom('document', 'note', 'record'), hostileString, junk),
    content: fc.oneof(hostileString, junk),
    tags: fc.oneof(fc.array(hostileString, { maxLength: 55 }), fc.array(junk, { maxLength: 3 }), junk),
    metadata: fc.oneof(
      fc.dictionary(hostileString, hostileString, { maxKeys: 55 }),
      fc.dictionary(hostileString, junk, { maxKeys: 3 }),
      junk,
    ),
    extra: junk,
  },
  { requiredKeys: [] },
);

const safeKey = fc.string({ minLength: 1, maxLength: 64 }).filter((k) => k !== '__proto__');
/** Bodies that obey every rule of decisions §5: the service must accept all of them. */
const validFields = {
  title: fc.string({ minLength: 1, maxLength: 500 }).filter((s) => !isBlank(s)),
  type: fc.constantFrom('document', 'note', 'record'),
  content: fc.oneof(fc.string({ maxLength: 200 }), fc.string({ unit: 'grapheme', maxLength: 50 })),
  tags: fc.array(
    fc.string({ minLength: 1, maxLength: 64 }).filter((s) => !isBlank(s)),
    { maxLength: 50 },
  ),
  metadata: fc.dictionary(safeKey, fc.string({ maxLength: 100 }), { maxKeys: 50, noNullPrototype: true }),
};
const validCreate = fc.record(validFields, { requiredKeys: ['title', 'type'] });
const validPatch = fc.record(validFields, { requiredKeys: [] });

type Sent =
  | { kind: 'valid'; body: unknown }
  | { kind: 'json'; body: unknown }
  | { kind: 'raw'; raw: string; type: string };

const contentType = fc.constantFrom(
  'application/json',
  'application/json; charset=utf-8',
  'text/plain',
  'application/x-www-form-urlencoded',
);
const sent = (valid: fc.Arbitrary<unknown>): fc.Arbitrary<Sent> =>
  fc.oneof(
    { weight: 3, arbitrary: valid.map((body) => ({ kind: 'valid' as const, body })) },
    { weight: 5, arbitrary: hostileBody.map((body) => ({ kind: 'json' as const, body })) },
    { weight: 1, arbitrary: fc.jsonValue().map((body) => ({ kind: 'json' as const, body })) },
    {
      weight: 1,
      arbitrary: fc
        .tuple(fc.oneof(fc.string(), fc.string({ unit: 'binary' })), contentType)
        .map(([raw, type]) => ({ kind: 'raw' as const, raw, type })),
    },
  );

/** Rows and events of the account, and the target row. */
async function state(h: Harness, accountId: string, id: string) {
  const count = (table: 'data_objects' | 'events') =>
    h.database.db
      .selectFrom(table)
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('account_id', '=', accountId)
      .executeTakeFirstOrThrow()
      .then((r) => Number(r.n));
  const row = await h.database.db
    .selectFrom('data_objects')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('id', '=', id)
    .executeTakeFirstOrThrow();
  return { rows: await count('data_objects'), events: await count('events'), row };
}

function send(h: Harness, key: string, method: string, url: string, s: Sent): Promise<TestResponse> {
  if (s.kind === 'raw')
    return h.request(method, url, { key, rawBody: s.raw, headers: { 'content-type': s.type } });
  return h.request(method, url, {
    key,
    rawBody: JSON.stringify(s.body) ?? 'null',
    headers: { 'content-type': 'application/json' },
  });
}

/** No 5xx, and every error is the envelope with a catalogue code that matches the status. */
function assertWellFormed(res: TestResponse, s: Sent) {
  const what = `${res.status} for ${JSON.stringify(s).slice(0, 300)}: ${res.raw.slice(0, 300)}`;
  assert.ok(res.status < 500, what);
  if (res.status >= 400) {
    const code = res.body?.error?.code;
    assert.equal(CATALOGUE[code], res.status, what);
    assert.equal(typeof res.body.error.message, 'string');
    assert.equal(res.body.error.request_id, res.headers['x-request-id']);
  }
  if (s.kind === 'valid') assert.ok(res.status < 300, `a valid body was refused: ${what}`);
}

/** Counts outcomes by success status or error code. */
function tally(seen: Map<string, number>, res: TestResponse) {
  const k = res.status < 400 ? String(res.status) : String(res.body?.error?.code);
  seen.set(k, (seen.get(k) ?? 0) + 1);
}

/** The generators must reach every interesting outcome, or the property proves little. */
function assertMix(seen: Map<string, number>, expected: string[]) {
  for (const k of expected) assert.ok((seen.get(k) ?? 0) > 0, `no ${k} among ${JSON.stringify([...seen])}`);
}

const view = (d: Record<string, unknown>) => JSON.stringify([d.title, d.type, d.content, d.tags, d.metadata]);

describeEachDatabase(
  'data objects: random bodies never cause a 5xx or a partial write',
  (h) => {
    let acc: TestAccount;
    let target: string;
    before(async () => {
      acc = await h.account('enterprise');
      const res = await h.request('POST', '/v1/data', {
        key: acc.adminKey,
        body: { title: 'Target', type: 'note' },
      });
      target = res.body.data.id;
    });

    it(`POST /data: ${RUNS} random bodies; 201 adds one row and one event, anything else adds nothing`, async () => {
      const seen = new Map<string, number>();
      await fc.assert(
        fc.asyncProperty(sent(validCreate), async (s) => {
          const before = await state(h, acc.id, target);
          const res = await send(h, acc.adminKey, 'POST', '/v1/data', s);
          assertWellFormed(res, s);
          tally(seen, res);
          assert.ok(res.status === 201 || res.status >= 400, `unexpected ${res.status}`);
          const after = await state(h, acc.id, target);
          const added = res.status === 201 ? 1 : 0;
          assert.equal(after.rows, before.rows + added, 'rows');
          assert.equal(after.events, before.events + added, 'events');
          if (res.status === 201 && s.kind !== 'raw') {
            const body = s.body as Record<string, unknown>;
            assert.equal(res.body.data.title, body.title);
            assert.equal(res.body.data.type, body.type);
          }
        }),
        { numRuns: RUNS },
      );
      assertMix(seen, [
        '201',
        'invalid_request',
        'invalid_json',
        'invalid_content_type',
        'payload_too_large',
      ]);
    });

    it(`PATCH /data/{id}: ${RUNS} random bodies; an event only when something changed`, async () => {
      const seen = new Map<string, number>();
      let current = view((await h.request('GET', `/v1/data/${target}`, { key: acc.adminKey })).body.data);
      await fc.assert(
        fc.asyncProperty(sent(validPatch), async (s) => {
          const before = await state(h, acc.id, target);
          const res = await send(h, acc.adminKey, 'PATCH', `/v1/data/${target}`, s);
          assertWellFormed(res, s);
          tally(seen, res);
          assert.ok(res.status === 200 || res.status >= 400, `unexpected ${res.status}`);
          const after = await state(h, acc.id, target);
          assert.equal(after.rows, before.rows, 'a patch never adds or removes rows');
          if (res.status !== 200) {
            assert.deepEqual(after.row, before.row, 'a refused patch changes nothing');
            assert.equal(after.events, before.events);
            return;
          }
          const next = view(res.body.data);
          assert.equal(after.events, before.events + (next === current ? 0 : 1), 'data.updated iff changed');
          const stored = await h.request('GET', `/v1/data/${target}`, { key: acc.adminKey });
          assert.deepEqual(stored.body.data, res.body.data, 'the answer is what was stored');
          current = next;
        }),
        { numRuns: RUNS },
      );
      assertMix(seen, ['200', 'invalid_request', 'invalid_json', 'payload_too_large']);
    });
  },
  { env: { ADS_BODY_LIMIT: String(BODY_LIMIT) } },
);
