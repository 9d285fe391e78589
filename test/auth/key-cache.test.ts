import assert from 'node:assert/strict';
import { it } from 'node:test';
import { sql } from 'kysely';
import { openDatabase } from '../../src/db/database.ts';
import { setAccountPlan } from '../../src/modules/accounts/repo.ts';
import { readAuthEpoch } from '../../src/modules/api-keys/repo.ts';
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

  it('applies changes committed over another connection (another process, the CLI) on the next request', async () => {
    const acc = await h.account('enterprise');
    const admin = await acc.user('admin', ['read', 'write', 'admin']);
    const member = await acc.user('member', ['read']);
    await Promise.all([warm(admin.key), warm(member.key)]);
    const other = openDatabase(h.config.database);
    try {
      const set = (table: 'api_keys' | 'users', id: string, values: Record<string, unknown>) =>
        other.db
          .updateTable(table)
          .set(values)
          .where('account_id', '=', acc.id)
          .where('id', '=', id)
          .execute();
      await set('api_keys', member.keyId, { revoked_at: new Date().toISOString() });
      assert.equal((await h.request('GET', '/v1/data', { key: member.key })).status, 401);
      await set('users', admin.id, { role: 'member' });
      const create = await h.request('POST', '/v1/api-keys', { key: admin.key, body: { scopes: ['admin'] } });
      assert.equal(create.status, 403, 'demoted over the other connection');
      assert.equal((await h.request('GET', '/v1/data', { key: admin.key })).status, 200);
      await other.db
        .deleteFrom('users')
        .where('account_id', '=', acc.id)
        .where('id', '=', admin.id)
        .execute();
      assert.equal((await h.request('GET', '/v1/data', { key: admin.key })).status, 401, 'user deleted');
    } finally {
      await other.close();
    }
  });

  if (h.dialect === 'sqlite') {
    it('SQLite: every update or delete of a key, user or account moves the auth epoch; data writes do not', async () => {
      const acc = await h.account('enterprise');
      const user = await acc.user('member', ['read', 'write']);
      const epoch = async () => {
        const v = await readAuthEpoch(h.database.db, 'sqlite');
        assert.equal(typeof v, 'number');
        return v as number;
      };
      const moves = async (what: string, change: () => Promise<unknown>) => {
        const before = await epoch();
        await change();
        assert.ok((await epoch()) > before, `${what} moves the epoch`);
      };
      const db = h.database.db;
      const stays = await epoch();
      const created = await h.request('POST', '/v1/data', {
        key: user.key,
        body: { type: 'note', title: 'epoch', content: 'a write of data' },
      });
      assert.equal(created.status, 201);
      await acc.user('member', ['read']);
      assert.equal(await epoch(), stays, 'creating objects, users and keys leaves it');
      await moves('a key update', () => update('api_keys', acc.id, user.keyId, { scopes: 'read' }));
      await moves('a user update', () => update('users', acc.id, user.id, { role: 'member' }));
      await moves('an account update', () => setAccountPlan(db, acc.id, 'pro'));
      await moves('a key delete', () =>
        db.deleteFrom('api_keys').where('account_id', '=', acc.id).where('id', '=', user.keyId).execute(),
      );
      await moves('a user delete', () =>
        db.deleteFrom('users').where('account_id', '=', acc.id).where('id', '=', user.id).execute(),
      );
      await moves('an account delete', () => db.deleteFrom('accounts').where('id', '=', acc.id).execute());
    });

    it('SQLite: serves what it read while the epoch stays, so the epoch is what each request checks', async () => {
      const acc = await h.account('enterprise');
      const user = await acc.user('member', ['read']);
      await warm(user.key);
      // Without its trigger a revocation leaves the epoch where it was: the cached answer stands...
      await sql`drop trigger api_keys_auth_epoch_update`.execute(h.database.db);
      try {
        await update('api_keys', acc.id, user.keyId, { revoked_at: new Date().toISOString() });
        assert.equal((await h.request('GET', '/v1/data', { key: user.key })).status, 200);
        // ...until anything moves the epoch, and the rows are read again.
        await update('users', acc.id, user.id, { status: 'active' });
        assert.equal((await h.request('GET', '/v1/data', { key: user.key })).status, 401);
      } finally {
        await sql`
          create trigger api_keys_auth_epoch_update after update on api_keys
          begin
            update auth_epoch set v = v + 1 where id = 1;
          end`.execute(h.database.db);
      }
    });
  }
});
