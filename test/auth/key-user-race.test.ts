import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { latch, sessionsWaitingOnLocks, until } from '../helpers/concurrency.ts';
import { postgresSkipReason } from '../helpers/databases.ts';
import { createHarness, describeEachDatabase, type TestAccount } from '../helpers/harness.ts';

/**
 * `POST /api-keys` by a member while an admin removes that member. Removing a user revokes their
 * keys (decisions §4), so the create either ran first (201, and the new key went with the user) or
 * meets a revoked key: 401, as any call with that key would. Never a 404 naming the caller's own user,
 * never a 500 from the foreign key, and no key outlives its user.
 */
describeEachDatabase('creating an API key while its user is removed', (h) => {
  let acc: TestAccount;
  before(async () => {
    acc = await h.account('enterprise');
  });

  it('answers 201 or 401, and leaves no key of the removed user', async () => {
    for (let i = 0; i < 20; i++) {
      const member = await acc.user('member', ['read', 'write']);
      const [created, removed] = await Promise.all([
        h.request('POST', '/v1/api-keys', { key: member.key, body: { scopes: ['read'] } }),
        h.request('DELETE', `/v1/users/${member.id}`, { key: acc.adminKey }),
      ]);
      assert.equal(removed.status, 204, removed.raw);
      assert.ok([201, 401].includes(created.status), `round ${i}: ${created.status} ${created.raw}`);
      if (created.status === 401) {
        assert.equal(created.body.error.code, 'unauthorized');
        assert.equal(created.body.error.message, 'The API key is malformed, unknown or revoked.');
      }
      const left = await h.database.db
        .selectFrom('api_keys')
        .select('id')
        .where('account_id', '=', acc.id)
        .where('user_id', '=', member.id)
        .execute();
      assert.deepEqual(left, [], `round ${i}: no key of the removed user is left`);
    }
  });
});

/**
 * The interleaving that made a 500 on PostgreSQL, made to happen: the removal has deleted the user
 * but not committed when the create checks its key (still valid in its snapshot) and reaches the
 * user's row; the removal commits while the create waits for that row.
 */
describe('PostgreSQL: a key created while the removal of its user commits', {
  skip: postgresSkipReason(),
}, () => {
  const h = createHarness('postgres');
  before(() => h.setup());
  after(() => h.teardown());

  it('is refused with 401 once the removal commits, and no key row is written', async () => {
    const acc = await h.account('enterprise');
    const member = await acc.user('member', ['read', 'write']);
    const gate = latch();
    const deleted = latch();
    const removal = h.database.db.transaction().execute(async (trx) => {
      await sql`DELETE FROM users WHERE account_id = ${acc.id} AND id = ${member.id}`.execute(trx);
      deleted.open();
      await gate.opened;
    });
    await deleted.opened;
    const create = h.request('POST', '/v1/api-keys', { key: member.key, body: { scopes: ['read'] } });
    // The create is past authentication once it waits on the user's row lock.
    await until(
      'the create waits on the user row',
      async () => (await sessionsWaitingOnLocks(h.database.db)) > 0,
    );
    gate.open();
    await removal;
    const res = await create;
    assert.equal(res.status, 401, res.raw);
    assert.equal(res.body.error.code, 'unauthorized');
    const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM api_keys
      WHERE account_id = ${acc.id} AND user_id = ${member.id}`.execute(h.database.db);
    assert.equal(rows[0]!.n, 0);
  });
});
