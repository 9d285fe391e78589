import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { newId } from '../../src/lib/ids.ts';
import { generateApiKey } from '../../src/modules/api-keys/tokens.ts';
import { latch, sessionsWaitingOnLocks, until } from '../helpers/concurrency.ts';
import { postgresSkipReason } from '../helpers/databases.ts';
import {
  createHarness,
  describeEachDatabase,
  type TestAccount,
  type TestResponse,
} from '../helpers/harness.ts';
import { liveInvitationToken } from '../helpers/invitations.ts';

describeEachDatabase('members: a role change or removal racing the acceptance of the invitation', (h) => {
  let acc: TestAccount;
  before(async () => {
    acc = await h.account('enterprise');
  });

  /** An invited user and a live token of theirs. */
  const invited = async (email: string, role = 'member') => {
    const res = await h.request('POST', '/v1/users', { key: acc.adminKey, body: { email, role } });
    assert.equal(res.status, 201, res.raw);
    const id = res.body.data.id as string;
    return { id, token: await liveInvitationToken(h.database.db, acc.id, id) };
  };

  it('answers both without a 5xx, and the role change reports the status the user has', async () => {
    for (let round = 0; round < 15; round++) {
      const user = await invited(`race-role-${round}@example.com`, round % 2 ? 'admin' : 'member');
      const [accepted, changed] = await Promise.all([
        h.request('POST', '/v1/invitations/accept', { body: { token: user.token } }),
        h.request('PATCH', `/v1/users/${user.id}`, {
          key: acc.adminKey,
          body: { role: round % 2 ? 'member' : 'admin' },
        }),
      ]);
      assert.equal(accepted.status, 200, `round ${round}: ${accepted.raw}`);
      assert.equal(changed.status, 200, `round ${round}: ${changed.raw}`);
      const row = await h.database.db
        .selectFrom('users')
        .select(['role', 'status'])
        .where('id', '=', user.id)
        .executeTakeFirstOrThrow();
      assert.equal(row.status, 'active');
      assert.equal(row.role, round % 2 ? 'member' : 'admin', `round ${round}: the change is kept`);
    }
  });

  it('answers both without a 5xx when the user is removed while accepting', async () => {
    for (let round = 0; round < 15; round++) {
      const user = await invited(`race-remove-${round}@example.com`);
      const [accepted, removed] = await Promise.all([
        h.request('POST', '/v1/invitations/accept', { body: { token: user.token } }),
        h.request('DELETE', `/v1/users/${user.id}`, { key: acc.adminKey }),
      ]);
      assert.ok([200, 400].includes(accepted.status), `round ${round}: ${accepted.raw}`);
      assert.equal(removed.status, 204, `round ${round}: ${removed.raw}`);
      const keys = await h.database.db
        .selectFrom('api_keys')
        .select('id')
        .where('user_id', '=', user.id)
        .execute();
      assert.deepEqual(keys, []);
    }
  });

  // PostgreSQL: a re-send locked the user's row, then wrote rows whose foreign key needs a share
  // lock on the account's row, which a role change or removal held for update while it waited for
  // the user's row: a deadlock, answered 500.
  it('answers a role change or removal racing re-sends of the invitation without a 5xx', async () => {
    for (let round = 0; round < 12; round++) {
      const user = await invited(`race-resend-${round}@example.com`);
      const change =
        round % 2
          ? () => h.request('DELETE', `/v1/users/${user.id}`, { key: acc.adminKey })
          : () =>
              h.request('PATCH', `/v1/users/${user.id}`, {
                key: acc.adminKey,
                body: { role: 'admin' },
              });
      const answers = await Promise.all([
        change(),
        h.request('POST', `/v1/users/${user.id}/invitation`, { key: acc.adminKey }),
        h.request('POST', `/v1/users/${user.id}/invitation`, { key: acc.adminKey }),
        change(),
      ]);
      for (const res of answers) {
        assert.ok([200, 204, 404].includes(res.status), `round ${round}: ${res.status} ${res.raw}`);
      }
    }
  });
});

/**
 * PostgreSQL, the interleavings made to happen: an acceptance holds the user's row (it has locked
 * it and activated the user) when a role change or removal starts, and then writes the user's
 * first key. The change waits for it and acts on the user as the acceptance left it: its answer
 * and its event carry the active status, not the invited one read before (and the removal takes
 * the new key with the user).
 */
describe('PostgreSQL: a role change or removal meeting an acceptance in flight', {
  skip: postgresSkipReason(),
}, () => {
  const h = createHarness('postgres');
  before(() => h.setup());
  after(() => h.teardown());

  const userEvents = async (accountId: string, userId: string, name: string) =>
    (
      await h.database.db
        .selectFrom('events')
        .select(['name', 'payload'])
        .where('account_id', '=', accountId)
        .where('name', '=', name)
        .execute()
    )
      .map((e) => JSON.parse(e.payload).data)
      .filter((d) => d.id === userId);

  /** A new account and an invited member of it. */
  const invitedMember = async (email: string) => {
    const acc = await h.account('enterprise');
    const res = await h.request('POST', '/v1/users', { key: acc.adminKey, body: { email, role: 'member' } });
    assert.equal(res.status, 201, res.raw);
    return { acc, userId: res.body.data.id as string };
  };

  /** Runs `change` while a transaction like an acceptance's holds the user and then writes a key. */
  const duringAcceptance = async (accountId: string, userId: string, change: () => Promise<TestResponse>) => {
    const locked = latch();
    const gate = latch();
    const acceptance = h.database.db.transaction().execute(async (trx) => {
      await sql`SELECT id FROM users WHERE account_id = ${accountId} AND id = ${userId} FOR UPDATE`.execute(
        trx,
      );
      await sql`UPDATE users SET status = 'active' WHERE account_id = ${accountId} AND id = ${userId}`.execute(
        trx,
      );
      locked.open();
      await gate.opened;
      const { hash, prefix } = generateApiKey();
      await sql`INSERT INTO api_keys (account_id, id, user_id, name, key_hash, key_prefix, scopes, created_at)
        VALUES (${accountId}, ${newId('apiKey')}, ${userId}, 'first key (invitation)', ${hash}, ${prefix},
          'read write', ${new Date().toISOString()})`.execute(trx);
    });
    await locked.opened;
    const answer = change();
    await until(
      'the change waits on the user row',
      async () => (await sessionsWaitingOnLocks(h.database.db)) > 0,
    );
    gate.open();
    await acceptance;
    return answer;
  };

  it('changes the role after the acceptance commits, and answers with the active status', async () => {
    const { acc, userId } = await invitedMember('inflight-role@example.com');
    const res = await duringAcceptance(acc.id, userId, () =>
      h.request('PATCH', `/v1/users/${userId}`, { key: acc.adminKey, body: { role: 'admin' } }),
    );
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.data.status, 'active', 'the status the user has once the change applies');
    assert.equal(res.body.data.role, 'admin');
    assert.deepEqual(await userEvents(acc.id, userId, 'user.updated'), [
      { id: userId, email: 'inflight-role@example.com', role: 'admin', status: 'active', changed: ['role'] },
    ]);
  });

  it('removes the user after the acceptance commits, key included', async () => {
    const { acc, userId } = await invitedMember('inflight-remove@example.com');
    const res = await duringAcceptance(acc.id, userId, () =>
      h.request('DELETE', `/v1/users/${userId}`, { key: acc.adminKey }),
    );
    assert.equal(res.status, 204, res.raw);
    const keys = await h.database.db
      .selectFrom('api_keys')
      .select('id')
      .where('user_id', '=', userId)
      .execute();
    assert.deepEqual(keys, []);
    assert.deepEqual(await userEvents(acc.id, userId, 'user.deleted'), [
      { id: userId, email: 'inflight-remove@example.com', role: 'member', status: 'active' },
    ]);
  });
});
