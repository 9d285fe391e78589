import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import { describeEachDatabase, type TestAccount } from '../helpers/harness.ts';

const BASE = Date.parse('2030-01-01T00:00:00.000Z');
const at = (n: number) => new Date(BASE + n * 1000).toISOString();

// GET /webhooks/{id}/deliveries reads the page, its total and the attempts in separate statements.
// On PostgreSQL, under READ COMMITTED, an attempt committing between them was listed under a
// delivery still shown as it was before that attempt (a CI run saw `pending`, due at its old time,
// beside the attempt that had failed it). Here attempts are written as a worker writes them (the
// attempt and the delivery's next state in one transaction) while the list is read again and
// again: every answer must show each delivery as of its latest listed attempt.
describeEachDatabase('GET /webhooks/{id}/deliveries: one snapshot', (h) => {
  let acc: TestAccount;
  let webhookId: string;
  let deliveryId: string;
  before(async () => {
    acc = await h.account('enterprise');
    const hook = await h.request('POST', '/v1/webhooks', {
      key: acc.adminKey,
      body: { url: 'https://example.com/hook', events: ['data.created'] },
    });
    assert.equal(hook.status, 201, hook.raw);
    webhookId = hook.body.data.id;
    const created = await h.request('POST', '/v1/data', {
      key: acc.adminKey,
      body: { title: 'x', type: 'note' },
    });
    assert.equal(created.status, 201);
    const list = await h.request('GET', `/v1/webhooks/${webhookId}/deliveries`, { key: acc.adminKey });
    deliveryId = list.body.data.deliveries[0].id;
  });

  it('never lists an attempt beside the delivery as it was before that attempt', async () => {
    const ATTEMPTS = 150;
    let written = 0;
    const writer = (async () => {
      for (let n = 1; n <= ATTEMPTS; n++) {
        await h.database.db.transaction().execute(async (trx) => {
          await trx
            .insertInto('webhook_attempts')
            .values({
              account_id: acc.id,
              delivery_id: deliveryId,
              attempt: n,
              at: at(n),
              status_code: 500,
              duration_ms: 1,
              error: null,
            })
            .execute();
          await trx
            .updateTable('webhook_deliveries')
            .set({ attempt_count: n, next_attempt_at: at(n + 0.5) })
            .where('account_id', '=', acc.id)
            .where('id', '=', deliveryId)
            .execute();
        });
        written = n;
        // Room for reads in between (on SQLite they share the writer's one connection).
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
    })();
    let reads = 0;
    while (written < ATTEMPTS) {
      // A timer turn: on SQLite every request resolves without one, which would starve the writer.
      await new Promise((resolve) => setTimeout(resolve, 0));
      const res = await h.request('GET', `/v1/webhooks/${webhookId}/deliveries`, { key: acc.adminKey });
      assert.equal(res.status, 200, res.raw);
      const d = res.body.data.deliveries[0];
      reads++;
      if (d.attempts.length === 0) continue;
      assert.equal(
        d.next_attempt_at,
        at(d.attempts.length + 0.5),
        `read ${reads}: ${d.attempts.length} attempts beside a delivery due at ${d.next_attempt_at}`,
      );
    }
    await writer;
    assert.ok(reads > 10, `${reads} reads`);
  });
});
