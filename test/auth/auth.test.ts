import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { before, it } from 'node:test';
import { failureKey } from '../../src/http/auth.ts';
import {
  describeEachDatabase,
  type Harness,
  type TestAccount,
  type TestResponse,
} from '../helpers/harness.ts';

function assertUnauthorized(res: TestResponse) {
  assert.equal(res.status, 401, res.raw.slice(0, 300));
  assert.equal(res.body.error.code, 'unauthorized');
  assert.match(String(res.headers['www-authenticate']), /^Bearer\b/);
  assert.equal(res.headers['x-request-id'], res.body.error.request_id);
}

function assertForbidden(res: TestResponse) {
  assert.equal(res.status, 403, res.raw.slice(0, 300));
  assert.equal(res.body.error.code, 'forbidden');
  assert.equal(res.headers['x-request-id'], res.body.error.request_id);
}

/** A well-formed key nobody was ever given. */
const unknownKey = () => `ads_${randomBytes(32).toString('base64url')}`;

/** Ids of the keys GET /api-keys shows to the caller. */
async function visibleKeyIds(h: Harness, key: string) {
  const res = await h.request('GET', '/v1/api-keys?limit=100', { key });
  assert.equal(res.status, 200);
  return new Set<string>(res.body.data.keys.map((k: { id: string }) => k.id));
}

describeEachDatabase(
  'authentication, scopes and roles',
  (h) => {
    let acc: TestAccount;
    before(async () => {
      acc = await h.account('enterprise');
    });

    it('answers a missing Authorization header with 401 and WWW-Authenticate: Bearer', async () => {
      assertUnauthorized(await h.request('GET', '/v1/data'));
      assertUnauthorized(await h.request('POST', '/v1/data', { body: { title: 'x', type: 'note' } }));
    });

    it('answers any other scheme, or no key after Bearer, with 401', async () => {
      const key = acc.adminKey;
      for (const authorization of [
        `Basic ${Buffer.from(`user:${key}`).toString('base64')}`,
        `Basic ${key}`,
        `Token ${key}`,
        key,
        'Bearer',
        'Bearer ',
        `Bearer ${key} extra`,
        `Bearer,${key}`,
      ]) {
        assertUnauthorized(await h.request('GET', '/v1/data', { headers: { authorization } }));
      }
    });

    it('accepts the scheme name in any letter case (RFC 9110 §11.1)', async () => {
      const res = await h.request('GET', '/v1/data', {
        headers: { authorization: `bearer ${acc.adminKey}` },
      });
      assert.equal(res.status, 200);
    });

    it('answers malformed and unknown keys with 401 and the same message as a revoked one', async () => {
      const key = acc.adminKey;
      const malformed = [
        'ads_short',
        `${key}x`,
        key.slice(0, -1),
        `xyz_${key.slice(4)}`,
        `${key.slice(0, 10)}!${key.slice(11)}`,
        'ads_'.padEnd(47, '\u00e9'),
      ];
      const messages = new Set<string>();
      for (const bad of [...malformed, unknownKey()]) {
        const res = await h.request('GET', '/v1/data', { key: bad });
        assertUnauthorized(res);
        messages.add(res.body.error.message);
      }
      const user = await acc.user('member', ['read']);
      assert.equal((await h.request('DELETE', `/v1/api-keys/${user.keyId}`, { key: user.key })).status, 204);
      const revoked = await h.request('GET', '/v1/data', { key: user.key });
      assertUnauthorized(revoked);
      messages.add(revoked.body.error.message);
      assert.equal(messages.size, 1, `one message, so a caller learns nothing about a key: ${[...messages]}`);
    });

    it('answers a valid key lacking the scope with 403 forbidden, before reading the body', async () => {
      const reader = await acc.user('admin', ['read']);
      const writer = await acc.user('admin', ['write']);
      assertForbidden(
        await h.request('POST', '/v1/data', { key: reader.key, body: { title: 'x', type: 'note' } }),
      );
      assertForbidden(await h.request('POST', '/v1/data', { key: reader.key, body: { junk: true } }));
      assertForbidden(await h.request('GET', '/v1/data', { key: writer.key }));
      assertForbidden(await h.request('GET', '/v1/api-keys', { key: writer.key }));
      const rows = await h.database.db
        .selectFrom('data_objects')
        .select('id')
        .where('account_id', '=', acc.id)
        .execute();
      assert.deepEqual(rows, [], 'nothing was written by a refused call');
      assert.equal((await h.request('GET', '/v1/data', { key: reader.key })).status, 200);
      assert.equal(
        (await h.request('POST', '/v1/data', { key: writer.key, body: { title: 'w', type: 'note' } })).status,
        201,
      );
    });

    it('caps a key by its role: a member key holding admin still acts as a member', async () => {
      const member = await acc.user('member', ['read', 'write']);
      // The API refuses to issue such a key; simulate one left over from a demotion or bad import.
      await h.database.db
        .updateTable('api_keys')
        .set({ scopes: 'read write admin' })
        .where('account_id', '=', acc.id)
        .where('id', '=', member.keyId)
        .execute();
      const seen = await visibleKeyIds(h, member.key);
      assert.deepEqual([...seen], [member.keyId], 'a member sees only their own keys');
      assert.ok((await visibleKeyIds(h, acc.adminKey)).has(member.keyId), 'an admin sees every key');
      assertForbidden(
        await h.request('POST', '/v1/api-keys', { key: member.key, body: { scopes: ['admin'] } }),
      );
      const adminKeyId = [...(await visibleKeyIds(h, acc.adminKey))].find((id) => id !== member.keyId);
      const del = await h.request('DELETE', `/v1/api-keys/${adminKeyId}`, { key: member.key });
      assert.equal(del.status, 404, "a member cannot revoke another user's key");
      assert.equal((await h.request('GET', '/v1/data', { key: acc.adminKey })).status, 200);
    });

    it('applies a role downgrade on the very next request, and an upgrade too', async () => {
      const admin = await acc.user('admin', ['read', 'write', 'admin']);
      const other = await acc.user('member', ['read']);
      assert.ok((await visibleKeyIds(h, admin.key)).has(other.keyId));
      const setRole = (role: string) =>
        h.database.db
          .updateTable('users')
          .set({ role })
          .where('account_id', '=', acc.id)
          .where('id', '=', admin.id)
          .execute();

      await setRole('member');
      assert.deepEqual([...(await visibleKeyIds(h, admin.key))], [admin.keyId]);
      assertForbidden(
        await h.request('POST', '/v1/api-keys', { key: admin.key, body: { scopes: ['admin'] } }),
      );
      assert.equal(
        (await h.request('DELETE', `/v1/api-keys/${other.keyId}`, { key: admin.key })).status,
        404,
      );

      await setRole('admin');
      assert.ok((await visibleKeyIds(h, admin.key)).has(other.keyId));
      const minted = await h.request('POST', '/v1/api-keys', { key: admin.key, body: { scopes: ['admin'] } });
      assert.equal(minted.status, 201);
    });

    it('refuses the key of a user who is not active with 401, and accepts it again when active', async () => {
      const user = await acc.user('member', ['read']);
      const setStatus = (status: string) =>
        h.database.db
          .updateTable('users')
          .set({ status })
          .where('account_id', '=', acc.id)
          .where('id', '=', user.id)
          .execute();
      await setStatus('invited');
      assertUnauthorized(await h.request('GET', '/v1/data', { key: user.key }));
      await setStatus('active');
      assert.equal((await h.request('GET', '/v1/data', { key: user.key })).status, 200);
    });

    it('scopes every call to the key’s own account', async () => {
      const other = await h.account('enterprise');
      const theirs = await h.request('POST', '/v1/data', {
        key: other.adminKey,
        body: { title: 'theirs', type: 'note' },
      });
      assert.equal(theirs.status, 201);
      const mine = await h.request('GET', '/v1/data', { key: acc.adminKey });
      assert.ok(!mine.body.data.items.some((i: { title: string }) => i.title === 'theirs'));
    });
  },
  // This suite fails authentication on purpose many times from one address; throttling has its own suite.
  { env: { ADS_AUTH_FAILURES_PER_MINUTE: '1000' } },
);

const LIMIT = 3;

describeEachDatabase(
  'failed-authentication throttling per client address',
  (h) => {
    let acc: TestAccount;
    before(async () => {
      acc = await h.account('enterprise');
    });
    /** A request from a given client address (inject's default is 127.0.0.1). */
    const from = async (remoteAddress: string, key?: string) => {
      const res = await h.app.inject({
        method: 'GET',
        url: '/v1/data',
        remoteAddress,
        headers: key ? { authorization: `Bearer ${key}` } : {},
      });
      return { status: res.statusCode, headers: res.headers, body: res.json() };
    };

    it(`answers the attempt after ${LIMIT} failures with 429 rate_limited and Retry-After`, async () => {
      for (let i = 0; i < LIMIT; i++) assert.equal((await from('203.0.113.7', unknownKey())).status, 401);
      const blocked = await from('203.0.113.7', unknownKey());
      assert.equal(blocked.status, 429);
      assert.equal(blocked.body.error.code, 'rate_limited');
      const retry = Number(blocked.headers['retry-after']);
      assert.ok(Number.isInteger(retry) && retry >= 1 && retry <= 60, `Retry-After ${retry}`);
      assert.equal((await from('203.0.113.7')).status, 429, 'a missing key is refused too');
    });

    it('blocks a valid key from a blocked address as well, until the window ends', async () => {
      // By design the address check comes before the key is looked at: a guesser who finds a key
      // while blocked cannot tell, because every answer from that address is 429. The key is
      // known to the server first (used from elsewhere), so its cached rows do not let it through.
      assert.equal((await from('198.51.100.20', acc.adminKey)).status, 200);
      assert.equal((await from('198.51.100.20', acc.adminKey)).status, 200);
      const res = await from('203.0.113.7', acc.adminKey);
      assert.equal(res.status, 429);
      assert.equal(res.body.error.code, 'rate_limited');
    });

    it('leaves other addresses, public routes and unknown paths alone', async () => {
      assert.equal((await from('198.51.100.9', acc.adminKey)).status, 200);
      assert.equal((await from('198.51.100.9', unknownKey())).status, 401);
      const health = await h.app.inject({ method: 'GET', url: '/healthz', remoteAddress: '203.0.113.7' });
      assert.equal(health.statusCode, 200);
      const missing = await h.app.inject({ method: 'GET', url: '/nope', remoteAddress: '203.0.113.7' });
      assert.equal(missing.statusCode, 404);
    });

    it(`lets a burst of guesses sent at once have ${LIMIT} answers and no more`, async () => {
      const burst = await Promise.all(Array.from({ length: 60 }, () => from('203.0.113.99', unknownKey())));
      const statuses = burst.map((r) => r.status);
      assert.equal(statuses.filter((s) => s === 401).length, LIMIT, statuses.join());
      assert.equal(statuses.filter((s) => s === 429).length, 60 - LIMIT, statuses.join());
      assert.ok(burst.filter((r) => r.status === 429).every((r) => Number(r.headers['retry-after']) >= 1));
    });

    it('counts an IPv6 client by its /64: rotating addresses in it buys no guesses', async () => {
      for (let i = 1; i <= LIMIT; i++) {
        assert.equal((await from(`2001:db8:1:2::${i.toString(16)}`, unknownKey())).status, 401);
      }
      for (const same of [
        '2001:db8:1:2:ffff:ffff:ffff:ffff',
        '2001:0db8:0001:0002::abcd',
        '2001:db8:1:2::1%eth0',
      ]) {
        assert.equal((await from(same, unknownKey())).status, 429, same);
      }
      assert.equal(
        (await from('2001:db8:1:3::1', unknownKey())).status,
        401,
        'the next /64 is another client',
      );
      assert.equal((await from('::ffff:192.0.2.200', unknownKey())).status, 401);
    });

    it('gives each IPv4 client behind NAT64 (64:ff9b::/96) its own budget', async () => {
      for (let i = 0; i < LIMIT; i++) {
        assert.equal((await from('64:ff9b::198.51.100.70', unknownKey())).status, 401);
      }
      assert.equal((await from('64:ff9b::198.51.100.70', unknownKey())).status, 429);
      assert.equal((await from('64:ff9b::c633:6446', unknownKey())).status, 429, 'the same client, in hex');
      assert.equal((await from('64:ff9b::198.51.100.71', unknownKey())).status, 401, 'another client');
      assert.equal((await from('64:ff9b::198.51.100.71', acc.adminKey)).status, 200);
    });

    it('still blocks an address once 10,000 others have failed (the set of failed addresses is full)', async () => {
      // The server remembers at most 10,000 addresses with failures, to skip asking the limiter for
      // the rest; once that is full, every address is asked. Without that, an address first failing
      // after the set filled up would never be blocked, and would learn that a guessed key is valid.
      for (let start = 0; start < 10_000; start += 250) {
        await Promise.all(
          Array.from({ length: 250 }, (_, i) => {
            const n = start + i;
            return from(`10.${n >> 16}.${(n >> 8) & 255}.${n & 255}`, unknownKey());
          }),
        );
      }
      const attacker = '192.0.2.250';
      for (let i = 0; i < LIMIT; i++) assert.equal((await from(attacker, unknownKey())).status, 401);
      assert.equal((await from(attacker, unknownKey())).status, 429);
      assert.equal((await from(attacker, acc.adminKey)).status, 429, 'a valid key from it is refused too');
      assert.equal((await from('192.0.2.251', acc.adminKey)).status, 200, 'another address is not');
    });

    it('keys IPv6 by its /64, and an IPv4-mapped or NAT64 address by its IPv4 address', () => {
      assert.equal(failureKey('::ffff:192.0.2.1'), '192.0.2.1');
      assert.equal(failureKey('192.0.2.1'), '192.0.2.1');
      assert.equal(failureKey('2001:db8::1'), '2001:db8:0:0::/64');
      assert.equal(failureKey('::1'), '0:0:0:0::/64');
      assert.equal(failureKey('fe80::1%lo0'), 'fe80:0:0:0::/64');
      // NAT64's well-known prefix carries the IPv4 client: each one keeps its own budget.
      assert.equal(failureKey('64:ff9b::192.0.2.1'), '192.0.2.1');
      assert.equal(failureKey('64:FF9B::c000:202'), '192.0.2.2');
      // Other addresses under 64:ff9b::/64 (outside the /96) and the local-use 64:ff9b:1::/48,
      // whose embedding the operator chooses, count by their /64 as before.
      assert.equal(failureKey('64:ff9b::1:c000:201'), '64:ff9b:0:0::/64');
      assert.equal(failureKey('64:ff9b:1::c000:201'), '64:ff9b:1:0::/64');
      // Not an IPv6 address (a proxy wrote a port): counted as written, never 'NaN:…' for all.
      assert.equal(failureKey('[2001:db8::1]:443'), '[2001:db8::1]:443');
    });

    it('does not count a valid key lacking a scope as a failed authentication', async () => {
      const writer = await acc.user('admin', ['write']);
      for (let i = 0; i < LIMIT + 2; i++) assert.equal((await from('192.0.2.44', writer.key)).status, 403);
      assert.equal((await from('192.0.2.44', acc.adminKey)).status, 200);
    });
  },
  { env: { ADS_AUTH_FAILURES_PER_MINUTE: String(LIMIT) } },
);
