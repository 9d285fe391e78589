import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { before, it } from 'node:test';
import { describeEachDatabase, type TestAccount, type TestResponse } from '../helpers/harness.ts';

const KEY_FIELDS = ['created_at', 'id', 'name', 'prefix', 'scopes', 'user_id'];

function assertError(res: TestResponse, status: number, code: string) {
  assert.equal(res.status, status, res.raw.slice(0, 300));
  assert.equal(res.body.error.code, code);
}

describeEachDatabase(
  'API keys: list, create, revoke',
  (h) => {
    let acc: TestAccount;
    const issued: string[] = [];
    before(async () => {
      acc = await h.account('enterprise');
      issued.push(acc.adminKey);
    });

    /** POST /api-keys as `key`; remembers every secret returned so the storage test can look for it. */
    const create = async (key: string, body: unknown) => {
      const res = await h.request('POST', '/v1/api-keys', { key, body });
      if (res.status === 201) issued.push(res.body.data.key);
      return res;
    };

    it('creates a key: 201, shown once with the ads_ prefix, and it works with exactly its scopes', async () => {
      const res = await create(acc.adminKey, { name: 'ci reader', scopes: ['read'] });
      assert.equal(res.status, 201);
      const d = res.body.data;
      assert.match(d.key, /^ads_[A-Za-z0-9_-]{43}$/);
      assert.match(d.id, /^key_[0-9A-HJKMNP-TV-Z]{26}$/);
      assert.equal(d.name, 'ci reader');
      assert.deepEqual(d.scopes, ['read']);
      assert.equal(d.user_id, acc.adminId);
      assert.ok(d.key.startsWith(d.prefix) && d.prefix.length < d.key.length / 2, 'prefix is a short start');
      assert.match(d.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      assert.match(String(res.headers['cache-control']), /no-store/, 'a secret is never cached');
      assert.equal((await h.request('GET', '/v1/data', { key: d.key })).status, 200);
      assertError(
        await h.request('POST', '/v1/data', { key: d.key, body: { title: 'x', type: 'note' } }),
        403,
        'forbidden',
      );
      const unnamed = await create(acc.adminKey, { scopes: ['write', 'read'] });
      assert.equal(unnamed.status, 201);
      assert.equal(unnamed.body.data.name, null);
      assert.deepEqual([...unnamed.body.data.scopes].sort(), ['read', 'write']);
    });

    it('needs only a valid key: a read-only key may mint another read-only key', async () => {
      const reader = await acc.user('member', ['read']);
      issued.push(reader.key);
      const res = await create(reader.key, { scopes: ['read'] });
      assert.equal(res.status, 201);
      assert.equal(res.body.data.user_id, reader.id, 'the new key belongs to the caller');
    });

    it("refuses scopes beyond the caller's effective scopes with 403 and creates nothing", async () => {
      const member = await acc.user('member', ['read', 'write']);
      const reader = await acc.user('admin', ['read']);
      issued.push(member.key, reader.key);
      const count = async () =>
        (await h.database.db.selectFrom('api_keys').select('id').where('account_id', '=', acc.id).execute())
          .length;
      const before = await count();
      assertError(await create(member.key, { scopes: ['admin'] }), 403, 'forbidden');
      assertError(await create(member.key, { scopes: ['read', 'admin'] }), 403, 'forbidden');
      assertError(await create(reader.key, { scopes: ['write'] }), 403, 'forbidden');
      assert.equal(await count(), before);
    });

    it('validates the body: unknown or empty or repeated scopes, bad name, unknown fields are 400', async () => {
      for (const body of [
        { scopes: ['superuser'] },
        { scopes: ['READ'] },
        { scopes: [] },
        {},
        { scopes: 'read' },
        { scopes: ['read', 'read'] },
        { scopes: ['read'], name: '' },
        { scopes: ['read'], name: 'n'.repeat(101) },
        { scopes: ['read'], name: 42 },
        { scopes: ['read'], name: 'nul\u0000' },
        { scopes: ['read'], user_id: acc.adminId },
      ]) {
        const res = await create(acc.adminKey, body);
        assertError(res, 400, 'invalid_request');
        assert.ok(Array.isArray(res.body.error.details) && res.body.error.details.length > 0);
      }
    });

    it('lists with pagination and never returns a secret or its hash', async () => {
      const other = await h.account('enterprise');
      const user = await other.user('member', ['read', 'write']);
      issued.push(other.adminKey, user.key);
      for (let i = 0; i < 4; i++) assert.equal((await create(user.key, { scopes: ['read'] })).status, 201);
      const seen: string[] = [];
      for (let page = 1; page <= 3; page++) {
        const res = await h.request('GET', `/v1/api-keys?limit=2&page=${page}`, { key: user.key });
        assert.equal(res.status, 200);
        const counts = { total: 5, page, pages: 3, limit: 2 };
        for (const [k, v] of Object.entries(counts)) {
          assert.equal(res.body.data[k], v, `data.${k}`);
          assert.equal(res.body.meta[k], v, `meta.${k}`);
        }
        assert.equal(res.body.data.keys.length, page < 3 ? 2 : 1);
        for (const k of res.body.data.keys) {
          assert.deepEqual(Object.keys(k).sort(), KEY_FIELDS);
          assert.equal(k.user_id, user.id);
          seen.push(k.id);
        }
        for (const secret of issued) assert.ok(!res.raw.includes(secret.slice(4)), 'no secret in a list');
        assert.doesNotMatch(res.raw, /[0-9a-f]{64}/, 'no hash in a list');
      }
      assert.equal(new Set(seen).size, 5, 'pages neither overlap nor skip');
      const past = await h.request('GET', '/v1/api-keys?limit=2&page=4', { key: user.key });
      assert.deepEqual(past.body.data.keys, []);
      assertError(await h.request('GET', '/v1/api-keys?limit=0', { key: user.key }), 400, 'invalid_request');
      assertError(await h.request('GET', '/v1/api-keys?owner=me', { key: user.key }), 400, 'invalid_request');
    });

    it("shows an admin every key of the account, a member only their own, nobody another account's", async () => {
      const member = await acc.user('member', ['read']);
      const other = await h.account('enterprise');
      issued.push(member.key, other.adminKey);
      const ids = async (key: string) =>
        (await h.request('GET', '/v1/api-keys?limit=100', { key })).body.data.keys.map(
          (k: { id: string; user_id: string }) => k,
        ) as { id: string; user_id: string }[];
      const adminView = await ids(acc.adminKey);
      assert.ok(adminView.some((k) => k.id === member.keyId));
      assert.ok(new Set(adminView.map((k) => k.user_id)).size > 1);
      const memberView = await ids(member.key);
      assert.deepEqual(
        memberView.map((k) => k.id),
        [member.keyId],
      );
      const otherView = await ids(other.adminKey);
      assert.ok(!otherView.some((k) => adminView.some((a) => a.id === k.id)));
    });

    it('revokes the caller’s own key: 204 with no body, then that key is 401 and gone from the list', async () => {
      const user = await acc.user('member', ['read']);
      const second = await create(user.key, { scopes: ['read'] });
      const del = await h.request('DELETE', `/v1/api-keys/${user.keyId}`, { key: user.key });
      assert.equal(del.status, 204);
      assert.equal(del.raw, '');
      assertError(await h.request('GET', '/v1/data', { key: user.key }), 401, 'unauthorized');
      const list = await h.request('GET', '/v1/api-keys', { key: second.body.data.key });
      assert.deepEqual(
        list.body.data.keys.map((k: { id: string }) => k.id),
        [second.body.data.id],
      );
      const again = await h.request('DELETE', `/v1/api-keys/${user.keyId}`, { key: second.body.data.key });
      assertError(again, 404, 'not_found');
    });

    it("answers a member revoking another user's key with 404 and leaves that key working", async () => {
      const member = await acc.user('member', ['read', 'write']);
      const victim = await acc.user('member', ['read']);
      assertError(
        await h.request('DELETE', `/v1/api-keys/${victim.keyId}`, { key: member.key }),
        404,
        'not_found',
      );
      const adminKeyId = (
        await h.request('GET', '/v1/api-keys?limit=100', { key: acc.adminKey })
      ).body.data.keys.find((k: { user_id: string }) => k.user_id === acc.adminId).id;
      assertError(
        await h.request('DELETE', `/v1/api-keys/${adminKeyId}`, { key: member.key }),
        404,
        'not_found',
      );
      assert.equal((await h.request('GET', '/v1/data', { key: victim.key })).status, 200);
      assert.equal((await h.request('GET', '/v1/data', { key: acc.adminKey })).status, 200);
    });

    it('lets an admin revoke any key of the account', async () => {
      const member = await acc.user('member', ['read']);
      assert.equal(
        (await h.request('DELETE', `/v1/api-keys/${member.keyId}`, { key: acc.adminKey })).status,
        204,
      );
      assertError(await h.request('GET', '/v1/data', { key: member.key }), 401, 'unauthorized');
    });

    it("answers another account's key id, and a malformed id, with 404 even for an admin", async () => {
      const other = await h.account('enterprise');
      const theirs = await other.user('member', ['read']);
      for (const id of [
        theirs.keyId,
        'key_nope',
        'dat_01JD4Z5T8N3QK9W2V7R6M1B0XC',
        'key_01JD4Z5T8N3QK9W2V7R6M1B0XC',
      ]) {
        assertError(await h.request('DELETE', `/v1/api-keys/${id}`, { key: acc.adminKey }), 404, 'not_found');
      }
      assert.equal((await h.request('GET', '/v1/data', { key: theirs.key })).status, 200);
    });

    it('stores only a SHA-256 hash: no row anywhere holds a plain key', async () => {
      assert.ok(issued.length >= 8, 'the suite issued keys to look for');
      const rows = await h.database.db.selectFrom('api_keys').selectAll().execute();
      const hashes = new Set(rows.map((r) => r.key_hash));
      const dump = JSON.stringify([
        rows,
        await h.database.db.selectFrom('users').selectAll().execute(),
        await h.database.db.selectFrom('accounts').selectAll().execute(),
        await h.database.db.selectFrom('events').selectAll().execute(),
        await h.database.db.selectFrom('data_objects').selectAll().execute(),
      ]);
      for (const key of issued) {
        assert.ok(hashes.has(createHash('sha256').update(key).digest('hex')), 'the hash is stored');
        assert.ok(!dump.includes(key.slice(12)), 'the secret part of the key is stored nowhere');
      }
      if (h.dialect === 'sqlite' && h.config.database.dialect === 'sqlite') {
        const file = h.config.database.file;
        const bytes = [file, `${file}-wal`]
          .filter((f) => fs.existsSync(f))
          .map((f) => fs.readFileSync(path.resolve(f)).toString('latin1'))
          .join('');
        for (const key of issued) assert.ok(!bytes.includes(key.slice(12)), 'nor in the database files');
      }
    });

    it('holds at most 100 active keys per user, also when creates race; revoking one makes room', async () => {
      const user = await acc.user('member', ['read', 'write']);
      const results = await Promise.all(
        Array.from({ length: 110 }, (_, i) => create(user.key, { name: `bulk ${i}`, scopes: ['read'] })),
      );
      const created = results.filter((r) => r.status === 201);
      assert.equal(created.length, 99, 'the user already held one key');
      for (const r of results.filter((x) => x.status !== 201)) {
        assertError(r, 400, 'invalid_request');
        assert.match(r.body.error.message, /at most 100 active API keys/);
      }
      const list = await h.request('GET', '/v1/api-keys?limit=1', { key: user.key });
      assert.equal(list.body.data.total, 100);
      // Another user of the account is not affected.
      assert.equal((await create(acc.adminKey, { scopes: ['read'] })).status, 201);
      const revoked = await h.request('DELETE', `/v1/api-keys/${created[0]!.body.data.id}`, {
        key: user.key,
      });
      assert.equal(revoked.status, 204);
      assert.equal((await create(user.key, { scopes: ['read'] })).status, 201);
      assertError(await create(user.key, { scopes: ['read'] }), 400, 'invalid_request');
    });
  },
  { env: { ADS_AUTH_FAILURES_PER_MINUTE: '1000' } },
);
