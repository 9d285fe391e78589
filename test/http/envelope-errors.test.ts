import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { sql } from 'kysely';
import {
  describeEachDatabase,
  type Harness,
  type TestAccount,
  type TestResponse,
} from '../helpers/harness.ts';

// A small limit so the 413 case needs only a few KiB; every other body here is far below it.
const BODY_LIMIT = 2048;

/** Asserts the error envelope of decisions §2 and that the request id is the same in body and header. */
function assertError(res: TestResponse, status: number, code: string) {
  assert.equal(res.status, status, `expected ${status} ${code}, got ${res.status} ${res.raw.slice(0, 300)}`);
  assert.match(String(res.headers['content-type']), /^application\/json/);
  assert.equal(res.body.error.code, code);
  assert.equal(typeof res.body.error.message, 'string');
  assert.ok(res.body.error.message.length > 0);
  assert.match(res.body.error.request_id, /^req_[0-9A-HJKMNP-TV-Z]{26}$/);
  assert.equal(res.headers['x-request-id'], res.body.error.request_id);
}

describeEachDatabase(
  'HTTP envelope and error catalogue',
  (h) => {
    let acc: TestAccount;
    before(async () => {
      acc = await h.account('enterprise');
    });
    const json = { 'content-type': 'application/json' };

    it('wraps success in {data, meta} with a fresh req_ id equal to X-Request-Id', async () => {
      const a = await h.request('GET', '/v1/data', { key: acc.adminKey });
      const b = await h.request('GET', '/v1/data', { key: acc.adminKey });
      assert.equal(a.status, 200);
      assert.match(a.body.meta.request_id, /^req_[0-9A-HJKMNP-TV-Z]{26}$/);
      assert.equal(a.headers['x-request-id'], a.body.meta.request_id);
      assert.match(a.body.meta.timestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      assert.notEqual(a.body.meta.request_id, b.body.meta.request_id);
    });

    it('ignores a client-supplied X-Request-Id (ids are ours, so logs cannot be forged)', async () => {
      const res = await h.request('GET', '/v1/data', {
        key: acc.adminKey,
        headers: { 'x-request-id': 'req_forged' },
      });
      assert.equal(res.status, 200);
      assert.notEqual(res.headers['x-request-id'], 'req_forged');
      assert.equal(res.headers['x-request-id'], res.body.meta.request_id);
    });

    it('carries X-Request-Id on every response: 204, 401, 404, 405, health probes', async () => {
      const created = await h.request('POST', '/v1/data', {
        key: acc.adminKey,
        body: { title: 'to delete', type: 'note' },
      });
      const del = await h.request('DELETE', `/v1/data/${created.body.data.id}`, { key: acc.adminKey });
      assert.equal(del.status, 204);
      assert.equal(del.raw, '');
      assert.match(String(del.headers['x-request-id']), /^req_/);
      for (const res of [
        await h.request('GET', '/v1/data'),
        await h.request('GET', '/v1/nope', { key: acc.adminKey }),
        await h.request('PUT', '/v1/data', { key: acc.adminKey }),
        await h.request('GET', '/healthz'),
        await h.request('GET', '/readyz'),
      ]) {
        assert.match(String(res.headers['x-request-id']), /^req_[0-9A-HJKMNP-TV-Z]{26}$/);
      }
    });

    it('answers unknown paths with 404 not_found in the JSON envelope, inside and outside /v1', async () => {
      for (const path of ['/nope', '/', '/v2/data', '/v1', '/v1/nope', '/v1/data/x/y', '/favicon.ico']) {
        assertError(await h.request('GET', path, { key: acc.adminKey }), 404, 'not_found');
        assertError(await h.request('GET', path), 404, 'not_found');
      }
    });

    it('answers an unknown path or method before reading the body: 404/405 whatever it holds', async () => {
      // Anyone may send these without a key: the body (up to ADS_BODY_LIMIT) is not read for nothing.
      const bodies = [
        { rawBody: '{"not json', headers: { 'content-type': 'application/json' } },
        { rawBody: 'x'.repeat(h.config.bodyLimit + 1), headers: { 'content-type': 'application/json' } },
        { rawBody: 'a=b', headers: { 'content-type': 'text/csv' } },
      ];
      for (const body of bodies) {
        for (const key of [acc.adminKey, null]) {
          assertError(await h.request('POST', '/v1/no-such-route', { key, ...body }), 404, 'not_found');
          assertError(await h.request('POST', '/nope', { key, ...body }), 404, 'not_found');
          assertError(await h.request('PUT', '/v1/data', { key, ...body }), 405, 'method_not_allowed');
        }
      }
    });

    it('answers a path with a trailing slash with 404, never a 405 that allows the method refused', async () => {
      const paths = ['/v1/search/?q=a', '/v1/data/', '/v1/data/dat_01JD4Z5T8N3QK9W2V7R6M1B0XC/', '/healthz/'];
      for (const path of paths) {
        for (const method of ['GET', 'POST', 'DELETE']) {
          assertError(await h.request(method, path, { key: acc.adminKey }), 404, 'not_found');
        }
      }
    });

    it('answers a known path with a wrong method with 405 method_not_allowed and Allow', async () => {
      const cases: [string, string, string[]][] = [
        ['PUT', '/v1/data', ['GET', 'POST']],
        ['DELETE', '/v1/data', ['GET', 'POST']],
        ['POST', '/v1/data/dat_01JD4Z5T8N3QK9W2V7R6M1B0XC', ['GET', 'PATCH', 'DELETE']],
        ['PUT', '/v1/items/dat_01JD4Z5T8N3QK9W2V7R6M1B0XC', ['GET']],
        ['PATCH', '/v1/api-keys', ['GET', 'POST']],
        ['POST', '/healthz', ['GET']],
        // Methods Fastify takes a body with, sent without one (and so without Content-Type).
        ['QUERY', '/v1/data', ['GET', 'POST']],
        ['QUERY', '/healthz', ['GET']],
        ['PROPFIND', '/v1/data', ['GET', 'POST']],
      ];
      for (const [method, path, expected] of cases) {
        const res = await h.request(method, path, { key: acc.adminKey });
        assertError(res, 405, 'method_not_allowed');
        const allow = String(res.headers.allow ?? '')
          .split(',')
          .map((s) => s.trim());
        for (const m of expected)
          assert.ok(allow.includes(m), `${method} ${path}: Allow ${allow} lacks ${m}`);
        assert.ok(!allow.includes(method), `${method} ${path}: Allow must not list ${method}`);
      }
    });

    it('refuses a body without Content-Type: application/json with 400 invalid_content_type', async () => {
      const body = JSON.stringify({ title: 'x', type: 'note' });
      const types = [undefined, 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data'];
      for (const type of types) {
        const headers: Record<string, string> = type ? { 'content-type': type } : {};
        assertError(
          await h.request('POST', '/v1/data', { key: acc.adminKey, rawBody: body, headers }),
          400,
          'invalid_content_type',
        );
      }
      const patch = await h.request('PATCH', '/v1/data/dat_01JD4Z5T8N3QK9W2V7R6M1B0XC', {
        key: acc.adminKey,
        rawBody: body,
        headers: { 'content-type': 'text/plain' },
      });
      assertError(patch, 400, 'invalid_content_type');
      const withCharset = await h.request('POST', '/v1/data', {
        key: acc.adminKey,
        rawBody: body,
        headers: { 'content-type': 'application/json; charset=utf-8' },
      });
      assert.equal(withCharset.status, 201, 'a charset parameter is allowed');
    });

    it('says a query parameter was given twice, rather than what type it must have', async () => {
      for (const [path, field] of [
        ['/v1/data?sort=title&sort=date', 'sort'],
        ['/v1/data?page=1&page=2', 'page'],
        ['/v1/search?q=revenue&q=report', 'q'],
      ]) {
        const res = await h.request('GET', path as string, { key: acc.adminKey });
        assertError(res, 400, 'invalid_request');
        assert.equal(res.body.error.message, `Invalid query: ${field} is given more than once.`, path);
        assert.deepEqual(res.body.error.details, [{ field, message: 'is given more than once' }]);
      }
      // A parameter that takes a list still takes one (filter=… repeated).
      const filters = await h.request('GET', '/v1/search?q=x&filter=type:note&filter=tag:a', {
        key: acc.adminKey,
      });
      assert.equal(filters.status, 200, filters.raw);
    });

    it('answers a trailing slash before a query with 404, not a 400 calling the parameter unknown', async () => {
      const res = await h.request('GET', '/v1/data/?page=1', { key: acc.adminKey });
      assertError(res, 404, 'not_found');
    });

    it('takes a request with no body under any Content-Type when the operation takes none', async () => {
      for (const type of ['text/plain', 'application/x-www-form-urlencoded']) {
        const created = await h.request('POST', '/v1/data', {
          key: acc.adminKey,
          body: { title: 'to delete', type: 'note' },
        });
        const path = `/v1/data/${created.body.data.id}`;
        // With a body it is refused, as decisions §1 says; without one there is nothing to refuse.
        const withBody = await h.request('DELETE', path, {
          key: acc.adminKey,
          rawBody: 'x',
          headers: { 'content-type': type },
        });
        assertError(withBody, 400, 'invalid_content_type');
        const none = await h.request('DELETE', path, {
          key: acc.adminKey,
          headers: { 'content-type': type },
        });
        assert.equal(none.status, 204, `${type}: ${none.raw}`);
        const emptied = await h.request('DELETE', path, {
          key: acc.adminKey,
          rawBody: '',
          headers: { 'content-type': type },
        });
        assertError(emptied, 404, 'not_found');
      }
      // An operation that takes a body still needs it as JSON.
      assertError(
        await h.request('POST', '/v1/data', {
          key: acc.adminKey,
          rawBody: '',
          headers: { 'content-type': 'text/plain' },
        }),
        400,
        'invalid_content_type',
      );
    });

    it('answers malformed JSON, an empty JSON body and prototype keys with 400 invalid_json', async () => {
      const bodies = [
        '{"title":',
        '{title: "x"}',
        "{'title':'x'}",
        '{"title":"x",}',
        '',
        '{"title":"x","type":"note","__proto__":{"admin":true}}',
        '{"title":"x","type":"note","constructor":{"prototype":{"admin":true}}}',
      ];
      for (const rawBody of bodies) {
        const res = await h.request('POST', '/v1/data', { key: acc.adminKey, rawBody, headers: json });
        assertError(res, 400, 'invalid_json');
        // Valid JSON with a refused key says so, rather than that the JSON is malformed.
        if (rawBody.includes('__proto__') || rawBody.includes('prototype')) {
          assert.match(
            res.body.error.message,
            /"__proto__" key, or a "constructor" object with a "prototype" key/,
          );
        } else assert.doesNotMatch(res.body.error.message, /__proto__/);
      }
      assert.equal(({} as Record<string, unknown>).admin, undefined, 'no prototype pollution');
    });

    it('refuses bytes that are not UTF-8 (invalid_json) and another charset (invalid_content_type)', async () => {
      const send = async (payload: Buffer, contentType: string) => {
        const res = await h.app.inject({
          method: 'POST',
          url: '/v1/data',
          payload,
          headers: { authorization: `Bearer ${acc.adminKey}`, 'content-type': contentType },
        });
        return {
          status: res.statusCode,
          headers: res.headers,
          body: res.json(),
          raw: res.body,
        } as TestResponse;
      };
      const latin1 = Buffer.from('{"title":"caf\u00e9","type":"note"}', 'latin1'); // é is one byte, 0xE9
      for (const bytes of [latin1, Buffer.from([0x7b, 0x22, 0xc0, 0xaf, 0x22, 0x3a, 0x31, 0x7d])]) {
        const res = await send(bytes, 'application/json');
        assertError(res, 400, 'invalid_json');
        assert.match(res.body.error.message, /not valid UTF-8/);
      }
      for (const type of ['application/json; charset=iso-8859-1', 'application/json;charset="UTF-16LE"']) {
        const res = await send(latin1, type);
        assertError(res, 400, 'invalid_content_type');
        assert.match(res.body.error.message, /must be UTF-8/);
      }
      const utf8 = Buffer.from('{"title":"caf\u00e9","type":"note"}', 'utf8');
      // A compressed body, or one only labelled so, is refused by name, not read as its bytes.
      for (const [encoding, payload] of [
        ['gzip', gzipSync(utf8)],
        ['GZIP', utf8],
        ['br', utf8],
        ['deflate, gzip', utf8],
      ] as const) {
        const res = await h.app.inject({
          method: 'POST',
          url: '/v1/data',
          payload,
          headers: {
            authorization: `Bearer ${acc.adminKey}`,
            'content-type': 'application/json',
            'content-encoding': encoding,
          },
        });
        assert.equal(res.statusCode, 400, encoding);
        assert.equal(res.json().error.code, 'invalid_content_type');
        assert.match(
          res.json().error.message,
          /Content-Encoding .* is not supported; send the JSON body uncompressed/,
        );
      }
      const identity = await h.app.inject({
        method: 'POST',
        url: '/v1/data',
        payload: utf8,
        headers: {
          authorization: `Bearer ${acc.adminKey}`,
          'content-type': 'application/json',
          'content-encoding': 'identity',
        },
      });
      assert.equal(identity.statusCode, 201, identity.body);
      for (const type of [
        'application/json',
        'application/json; charset=UTF-8',
        'application/json;charset=utf8',
      ]) {
        const res = await send(utf8, type);
        assert.equal(res.status, 201, res.raw);
        assert.equal(res.body.data.title, 'caf\u00e9');
      }
    });

    it('answers JSON nested deeper than 64 levels with 400 invalid_json, Idempotency-Key or not', async () => {
      const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);
      const hook = await h.request('POST', '/v1/webhooks', {
        key: acc.adminKey,
        body: { url: 'https://example.com/hook', events: ['*'] },
      });
      assert.equal(hook.status, 201);
      const url = `/v1/webhooks/${hook.body.data.id}/test`;
      for (const headers of [json, { ...json, 'idempotency-key': 'deep-body' }]) {
        const deep = await h.request('POST', url, { key: acc.adminKey, rawBody: nested(1000), headers });
        assertError(deep, 400, 'invalid_json');
        assert.match(deep.body.error.message, /deeper than 64/);
      }
      // A string full of brackets is not nesting, and 64 levels still parse (then fail validation).
      const text = `{"title":"${'['.repeat(500)}","type":"note"}`;
      const created = await h.request('POST', '/v1/data', {
        key: acc.adminKey,
        rawBody: text,
        headers: json,
      });
      assert.equal(created.status, 201);
      const shallow = `{"title":"x","type":"note","metadata":{"k":${nested(62)}}}`;
      assertError(
        await h.request('POST', '/v1/data', { key: acc.adminKey, rawBody: shallow, headers: json }),
        400,
        'invalid_request',
      );
    });

    it("answers an over-long path id with 404 not_found in the envelope, not the router's 414", async () => {
      const res = await h.request('GET', `/v1/data/dat_${'A'.repeat(5000)}`, { key: acc.adminKey });
      assertError(res, 404, 'not_found');
      // An id that cannot be percent-decoded is no resource's id either.
      assertError(await h.request('GET', '/v1/data/%C3%28', { key: acc.adminKey }), 404, 'not_found');
    });

    it('answers a body over the limit with 413 payload_too_large and stores nothing', async () => {
      const before = await countRows(h, acc.id);
      const res = await h.request('POST', '/v1/data', {
        key: acc.adminKey,
        body: { title: 'big', type: 'note', content: 'x'.repeat(BODY_LIMIT + 1) },
      });
      assertError(res, 413, 'payload_too_large');
      assert.deepEqual(await countRows(h, acc.id), before);
      const fits = await h.request('POST', '/v1/data', {
        key: acc.adminKey,
        body: { title: 'fits', type: 'note', content: 'x'.repeat(BODY_LIMIT - 200) },
      });
      assert.equal(fits.status, 201);
    });

    it('validates bodies strictly: unknown fields, wrong types (no coercion), blank strings', async () => {
      const cases: [unknown, string][] = [
        [{ title: 'x', type: 'note', colour: 'red' }, 'colour'],
        [{ title: 123, type: 'note' }, 'title'],
        [{ title: true, type: 'note' }, 'title'],
        [{ title: ['x'], type: 'note' }, 'title'],
        [{ title: 'x', type: 'note', content: 5 }, 'content'],
        [{ title: 'x', type: 'note', tags: 'a,b' }, 'tags'],
        [{ title: '', type: 'note' }, 'title'],
        [{ title: '   ', type: 'note' }, 'title'],
        [{ type: 'note' }, 'title'],
      ];
      for (const [body, field] of cases) {
        const res = await h.request('POST', '/v1/data', { key: acc.adminKey, body });
        assertError(res, 400, 'invalid_request');
        assert.ok(Array.isArray(res.body.error.details), 'details is an array');
        for (const d of res.body.error.details) {
          assert.deepEqual(Object.keys(d).sort(), ['field', 'message']);
          assert.equal(typeof d.field, 'string');
          assert.equal(typeof d.message, 'string');
        }
        assert.ok(
          res.body.error.details.some((d: { field: string }) => d.field === field),
          `${JSON.stringify(body)}: details ${JSON.stringify(res.body.error.details)} name ${field}`,
        );
      }
      for (const body of [null, [], 'text', 42]) {
        const res = await h.request('POST', '/v1/data', {
          key: acc.adminKey,
          rawBody: JSON.stringify(body),
          headers: json,
        });
        assertError(res, 400, 'invalid_request');
      }
    });

    it('never shows internals in a 500 and leaves no partial write', async () => {
      // Hide the outbox table so the create transaction fails after its first insert.
      await sql`ALTER TABLE events RENAME TO events_hidden_for_test`.execute(h.database.db);
      let res: TestResponse;
      const before = await h.database.db
        .selectFrom('data_objects')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow();
      try {
        res = await h.request('POST', '/v1/data', {
          key: acc.adminKey,
          body: { title: 'boom', type: 'note' },
        });
      } finally {
        await sql`ALTER TABLE events_hidden_for_test RENAME TO events`.execute(h.database.db);
      }
      assertError(res, 500, 'internal_error');
      assert.equal(res.body.error.details, undefined);
      assert.doesNotMatch(
        res.raw,
        /events|relation|sqlite|postgres|no such table|stack|\.ts\b|select|insert/i,
      );
      const after = await h.database.db
        .selectFrom('data_objects')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow();
      assert.equal(Number(after.n), Number(before.n), 'the object insert was rolled back with the event');
      const again = await h.request('POST', '/v1/data', {
        key: acc.adminKey,
        body: { title: 'ok', type: 'note' },
      });
      assert.equal(again.status, 201);
    });

    it('serves /healthz and /readyz with 200 and no key', async () => {
      const health = await h.request('GET', '/healthz');
      assert.equal(health.status, 200);
      assert.equal(health.body.status, 'ok');
      const ready = await h.request('GET', '/readyz');
      assert.equal(ready.status, 200);
      assert.equal(ready.body.status, 'ok');
    });

    it('sends HSTS, nosniff and no-store, and never X-Powered-By, on success and on errors', async () => {
      for (const res of [
        await h.request('GET', '/v1/data', { key: acc.adminKey }),
        await h.request('GET', '/v1/data'),
        await h.request('GET', '/nope'),
        await h.request('GET', '/healthz'),
        // Answered by the router before any hook, once: a long id, and a path it cannot decode.
        await h.request('GET', `/v1/data/${'a'.repeat(300)}`, { key: acc.adminKey }),
        await h.request('GET', '/%zz'),
        await h.request('GET', '/docs/%E0%A4%A'),
      ]) {
        const hsts = String(res.headers['strict-transport-security'] ?? '');
        const maxAge = Number(/max-age=(\d+)/.exec(hsts)?.[1] ?? 0);
        assert.ok(maxAge >= 15_552_000, `HSTS max-age of at least 180 days, got "${hsts}"`);
        assert.equal(res.headers['x-content-type-options'], 'nosniff');
        assert.equal(res.headers['x-powered-by'], undefined);
        assert.match(String(res.headers['cache-control']), /no-store/);
      }
    });
  },
  { env: { ADS_BODY_LIMIT: String(BODY_LIMIT) } },
);

/** Data rows and events of one account. */
async function countRows(h: Harness, accountId: string) {
  const [rows, events] = await Promise.all([
    h.database.db
      .selectFrom('data_objects')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('account_id', '=', accountId)
      .executeTakeFirstOrThrow(),
    h.database.db
      .selectFrom('events')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('account_id', '=', accountId)
      .executeTakeFirstOrThrow(),
  ]);
  return { rows: Number(rows.n), events: Number(events.n) };
}
