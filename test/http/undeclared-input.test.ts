import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import { describeEachDatabase, type TestAccount } from '../helpers/harness.ts';

const PREFIX: Record<string, string> = {
  data: 'dat_',
  items: 'dat_',
  users: 'usr_',
  webhooks: 'wh_',
  deliveries: 'whd_',
  'api-keys': 'key_',
};
/** A well-formed id nobody has, so the path matches and only the query or body can be refused. */
const fakeId = (resource: string) => `${PREFIX[resource] ?? 'x_'}01JD4Z5T8N3QK9W2V7R6M1B0XC`;

// decisions §1: unknown fields are a 400. An operation that declares no query parameters, or no
// body, refuses them too, instead of ignoring what the caller believes it asked for.
describeEachDatabase('input an operation does not declare', (h) => {
  let acc: TestAccount;
  let operations: { method: string; path: string; hasBody: boolean }[];
  before(async () => {
    acc = await h.account('enterprise');
    const doc = h.app.swagger() as {
      paths: Record<string, Record<string, { requestBody?: unknown; parameters?: { in: string }[] }>>;
    };
    operations = Object.entries(doc.paths)
      .filter(([path]) => path.startsWith('/v1/'))
      .flatMap(([path, ops]) =>
        Object.entries(ops)
          .filter(([method]) => ['get', 'post', 'patch', 'put', 'delete'].includes(method))
          .map(([method, op]) => ({
            method: method.toUpperCase(),
            path: path.replace(
              /([a-z-]+)\/\{[a-z_]+\}/g,
              (_, resource: string) => `${resource}/${fakeId(resource)}`,
            ),
            hasBody: op.requestBody !== undefined,
          })),
      );
    assert.ok(operations.length >= 20, `${operations.length} operations`);
  });

  it('refuses an unknown query parameter on every operation, with or without parameters of its own', async () => {
    for (const op of operations) {
      const res = await h.request(op.method, `${op.path}?zz_unknown=1`, {
        key: acc.adminKey,
        ...(op.hasBody ? { body: {} } : {}),
      });
      assert.equal(res.status, 400, `${op.method} ${op.path}: ${res.raw}`);
      assert.equal(res.body.error.code, 'invalid_request');
      assert.ok(
        res.body.error.details.some(
          (d: { field: string; message: string }) =>
            d.field === 'zz_unknown' && d.message === 'is not a known field',
        ),
        `${op.method} ${op.path}: ${res.raw}`,
      );
    }
  });

  it('refuses a body with fields where the operation takes none; no body (labelled JSON or not), null or {} pass', async () => {
    const bodiless = operations.filter((op) => !op.hasBody && op.method !== 'GET');
    assert.ok(bodiless.length >= 5, bodiless.map((op) => op.path).join());
    for (const op of bodiless) {
      const res = await h.request(op.method, op.path, {
        key: acc.adminKey,
        body: { role: 'admin', force: true },
      });
      assert.equal(res.status, 400, `${op.method} ${op.path}: ${res.raw}`);
      assert.equal(res.body.error.code, 'invalid_request');
      assert.match(res.body.error.message, /^Invalid body: role is not a known field \(and 1 more\)/);
      // '' with Content-Type: application/json: what a client with a JSON session default sends.
      for (const rawBody of ['{}', 'null', '']) {
        const empty = await h.request(op.method, op.path, {
          key: acc.adminKey,
          rawBody,
          headers: { 'content-type': 'application/json' },
        });
        assert.equal(empty.status, 404, `${op.method} ${op.path} ${rawBody}: ${empty.raw}`);
      }
      const scalar = await h.request(op.method, op.path, { key: acc.adminKey, body: [1] });
      assert.equal(scalar.status, 400);
      assert.deepEqual(scalar.body.error.details, [{ field: 'body', message: 'must be empty' }]);
    }
  });

  it('does nothing it was not asked: DELETE ?soft=true and a re-send with a role leave everything as it was', async () => {
    const created = await h.request('POST', '/v1/data', {
      key: acc.adminKey,
      body: { title: 'keep', type: 'note' },
    });
    const id = created.body.data.id as string;
    const del = await h.request('DELETE', `/v1/data/${id}?soft=true`, { key: acc.adminKey });
    assert.equal(del.status, 400);
    assert.equal((await h.request('GET', `/v1/data/${id}`, { key: acc.adminKey })).status, 200);
    const invited = await h.request('POST', '/v1/users', {
      key: acc.adminKey,
      body: { email: 'undeclared@example.com', role: 'member' },
    });
    const mails = async () =>
      (await h.database.db.selectFrom('mail_outbox').select('id').where('account_id', '=', acc.id).execute())
        .length;
    const before = await mails();
    const resend = await h.request('POST', `/v1/users/${invited.body.data.id}/invitation`, {
      key: acc.adminKey,
      body: { role: 'admin' },
    });
    assert.equal(resend.status, 400);
    assert.equal(await mails(), before, 'no invitation was re-sent');
    const user = await h.request('GET', '/v1/users?limit=100', { key: acc.adminKey });
    const row = user.body.data.users.find((u: { id: string }) => u.id === invited.body.data.id);
    assert.equal(row.role, 'member');
  });
});
