import assert from 'node:assert/strict';
import { it } from 'node:test';
import { setAccountPlan } from '../../src/modules/accounts/repo.ts';
import { describeEachDatabase } from '../helpers/harness.ts';

/**
 * Authentication remembers which key a bearer token is, but must still apply every change to the
 * key, its user and its account on the very next request. The changes are made straight in the
 * database, as another instance of the service would make them: nothing tells this instance.
 */
describeEachDatabase('API key lookup cache: changes made elsewhere apply on the next request', (h) => {
  const warm = async (key: string) => {
    for (let i = 0; i < 3; i++) assert.equal((await h.request('GET', '/v1/data', { key })).status, 200);
  };
  const update = (table: 'api_keys' | 'users', accountId: string, id: string, set: Record<string, unknown>) =>
    h.database.db
      .updateTable(table)
      .set(set)
      .where('account_id', '=', accountId)
      .where('id', '=', id)
      .execute();

  it('refuses a key revoked in the database on the next request', async () => {
    const acc = await h.account('enterprise');
    const user = await acc.user('member', ['read', 'write']);
    await warm(user.key);
    await update('api_keys', acc.id, user.keyId, { revoked_at: new Date().toISOString() });
    const res = await h.request('GET', '/v1/data', { key: user.key });
    assert.equal(res.status, 401);
    assert.equal(res.body.error.code, 'unauthorized');
  });

  it('applies a role change and a scope change made in the database on the next request', async () => {
    const acc = await h.account('enterprise');
    const admin = await acc.user('admin', ['read', 'write', 'admin']);
    const createKey = () =>
      h.request('POST', '/v1/api-keys', { key: admin.key, body: { scopes: ['admin'] } });
    await warm(admin.key);
    assert.equal((await createKey()).status, 201);
    await update('users', acc.id, admin.id, { role: 'member' });
    assert.equal((await createKey()).status, 403, 'demoted: admin scope capped by the role');
    await update('users', acc.id, admin.id, { role: 'admin' });
    assert.equal((await createKey()).status, 201, 'promoted again');
    await update('api_keys', acc.id, admin.keyId, { scopes: 'write' });
    assert.equal((await h.request('GET', '/v1/data', { key: admin.key })).status, 403, 'read scope removed');
  });

  it('refuses the key of a user made inactive in the database on the next request', async () => {
    const acc = await h.account('enterprise');
    const user = await acc.user('member', ['read']);
    await warm(user.key);
    await update('users', acc.id, user.id, { status: 'invited' });
    assert.equal((await h.request('GET', '/v1/data', { key: user.key })).status, 401);
    await update('users', acc.id, user.id, { status: 'active' });
    assert.equal((await h.request('GET', '/v1/data', { key: user.key })).status, 200);
  });

  it("applies the account's plan changed in the database on the next request", async () => {
    const acc = await h.account('free');
    const limitOf = async () => {
      const res = await h.request('GET', '/v1/data', { key: acc.adminKey });
      assert.equal(res.status, 200);
      return Number(res.headers['x-ratelimit-limit']);
    };
    const free = await limitOf();
    await limitOf();
    await setAccountPlan(h.database.db, acc.id, 'pro');
    const pro = await limitOf();
    assert.ok(pro > free, `pro minute limit ${pro} above free ${free}`);
  });

  it('tells keys apart: a revoked key stays refused while its sibling keeps working', async () => {
    const acc = await h.account('enterprise');
    const one = await acc.user('member', ['read']);
    const two = await acc.user('member', ['read']);
    await Promise.all([warm(one.key), warm(two.key)]);
    await update('api_keys', acc.id, one.keyId, { revoked_at: new Date().toISOString() });
    for (let i = 0; i < 2; i++) {
      assert.equal((await h.request('GET', '/v1/data', { key: one.key })).status, 401);
      assert.equal((await h.request('GET', '/v1/data', { key: two.key })).status, 200);
    }
  });
});
