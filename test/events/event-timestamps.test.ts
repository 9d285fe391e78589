import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { describeEachDatabase, type TestAccount } from '../helpers/harness.ts';
import { liveInvitationToken } from '../helpers/invitations.ts';

// docs/webhooks.md: no order of delivery is guaranteed, so a receiver uses `timestamp` to discard
// stale events. That only works if one object's (or member's) events have strictly increasing
// timestamps, also for changes within one millisecond and from a server whose clock is behind.
describeEachDatabase('event timestamps strictly increase per object and per member', (h) => {
  let acc: TestAccount;
  before(async () => {
    acc = await h.account();
  });
  after(() => {
    h.clock.now = null;
  });

  const eventsOf = async (id: string) =>
    (
      await h.database.db
        .selectFrom('events')
        .select(['name', 'payload'])
        .where('account_id', '=', acc.id)
        .execute()
    )
      .map((e) => ({ name: e.name, payload: JSON.parse(e.payload) }))
      .filter((e) => e.payload.data.id === id)
      .map((e) => ({ name: e.name, timestamp: e.payload.timestamp as string }));

  const assertIncreasing = (events: { name: string; timestamp: string }[], names: string[]) => {
    assert.deepEqual(
      events.map((e) => e.name).sort(),
      [...names].sort(),
      'one event per change, none for anything else',
    );
    const times = events.map((e) => e.timestamp).sort();
    assert.equal(new Set(times).size, times.length, `no two events share a timestamp: ${times}`);
    // Sorted by timestamp, the events come in the order the changes were made.
    const byTime = [...events].sort((a, b) => (a.timestamp < b.timestamp ? -1 : 1));
    assert.deepEqual(
      byTime.map((e) => e.name),
      names,
    );
  };

  it('a data object changed several times in one millisecond, then by a server whose clock is behind', async () => {
    const t0 = Date.parse('2026-06-01T12:00:00.000Z');
    h.clock.now = t0;
    const created = await h.request('POST', '/v1/data', {
      key: acc.adminKey,
      body: { title: 'v0', type: 'note', content: 'x' },
    });
    assert.equal(created.status, 201);
    const id = created.body.data.id as string;
    const first = await h.request('PATCH', `/v1/data/${id}`, { key: acc.adminKey, body: { title: 'v1' } });
    const second = await h.request('PATCH', `/v1/data/${id}`, { key: acc.adminKey, body: { title: 'v2' } });
    assert.equal(first.status, 200);
    assert.equal(second.status, 200);
    assert.ok(first.body.data.updated_at > created.body.data.created_at);
    assert.ok(second.body.data.updated_at > first.body.data.updated_at);
    // Another server's clock, a second behind.
    h.clock.now = t0 - 1000;
    const third = await h.request('PATCH', `/v1/data/${id}`, { key: acc.adminKey, body: { title: 'v3' } });
    assert.ok(third.body.data.updated_at > second.body.data.updated_at);
    const gone = await h.request('DELETE', `/v1/data/${id}`, { key: acc.adminKey });
    assert.equal(gone.status, 204);
    const events = await eventsOf(id);
    assertIncreasing(events, [
      'data.created',
      'data.updated',
      'data.updated',
      'data.updated',
      'data.deleted',
    ]);
    // The event of an update carries the object's new updated_at.
    const updates = events.filter((e) => e.name === 'data.updated').map((e) => e.timestamp);
    assert.deepEqual(updates.sort(), [
      first.body.data.updated_at,
      second.body.data.updated_at,
      third.body.data.updated_at,
    ]);
    // The deletion event keeps only the documented fields.
    const [deleted] = (
      await h.database.db
        .selectFrom('events')
        .select('payload')
        .where('account_id', '=', acc.id)
        .where('name', '=', 'data.deleted')
        .execute()
    ).map((e) => JSON.parse(e.payload).data);
    assert.deepEqual(deleted, { id, title: 'v3', type: 'note' });
  });

  it("a member's role changed twice in one millisecond, then removed", async () => {
    h.clock.now = null;
    const member = await acc.user('member', ['read']);
    // A clock behind the member's own updated_at (written with the real time).
    h.clock.now = Date.now() - 5000;
    const up = await h.request('PATCH', `/v1/users/${member.id}`, {
      key: acc.adminKey,
      body: { role: 'admin' },
    });
    const down = await h.request('PATCH', `/v1/users/${member.id}`, {
      key: acc.adminKey,
      body: { role: 'member' },
    });
    assert.equal(up.status, 200);
    assert.equal(down.status, 200);
    const removed = await h.request('DELETE', `/v1/users/${member.id}`, { key: acc.adminKey });
    assert.equal(removed.status, 204);
    assertIncreasing(await eventsOf(member.id), ['user.updated', 'user.updated', 'user.deleted']);
  });

  it('an invited member promoted by a server whose clock is ahead, then accepting and changed on one with the true time', async () => {
    h.clock.now = null;
    const invited = await h.request('POST', '/v1/users', {
      key: acc.adminKey,
      body: { email: 'skew@example.com', role: 'member' },
    });
    assert.equal(invited.status, 201);
    const id = invited.body.data.id as string;
    const token = await liveInvitationToken(h.database.db, acc.id, id);
    h.clock.now = Date.now() + 2000; // a server two seconds ahead
    const up = await h.request('PATCH', `/v1/users/${id}`, { key: acc.adminKey, body: { role: 'admin' } });
    assert.equal(up.status, 200);
    h.clock.now = null; // the acceptance and what follows on a server with the true time
    const accepted = await h.request('POST', '/v1/invitations/accept', { body: { token } });
    assert.equal(accepted.status, 200);
    const down = await h.request('PATCH', `/v1/users/${id}`, { key: acc.adminKey, body: { role: 'member' } });
    assert.equal(down.status, 200);
    assert.equal((await h.request('DELETE', `/v1/users/${id}`, { key: acc.adminKey })).status, 204);
    assertIncreasing(await eventsOf(id), ['user.created', 'user.updated', 'user.updated', 'user.deleted']);
  });
});
