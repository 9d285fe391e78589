import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import { listenForDeliveries, onDeliveriesDue } from '../../src/events/notify.ts';
import { recordEvent } from '../../src/events/outbox.ts';
import { newId } from '../../src/lib/ids.ts';
import { pgDriver } from '../../src/lib/optional-modules.ts';
import { insertWebhook } from '../../src/modules/webhooks/repo.ts';
import { describeEachDatabase, type Harness, type TestAccount } from '../helpers/harness.ts';
import { waitUntil } from '../webhooks/fixtures.ts';

async function addHook(
  h: Harness,
  accountId: string,
  events: string[],
  status: 'active' | 'disabled' = 'active',
) {
  const id = newId('webhook');
  const now = new Date().toISOString();
  await insertWebhook(h.database.db, {
    account_id: accountId,
    id,
    url: 'https://hooks.example.com/',
    events: JSON.stringify(events),
    sealed_secret: null,
    status,
    disabled_reason: status === 'disabled' ? 'test' : null,
    created_at: now,
    updated_at: now,
  });
  return id;
}

const deliveriesFor = (h: Harness, eventId: string) =>
  h.database.db.selectFrom('webhook_deliveries').selectAll().where('event_id', '=', eventId).execute();

describeEachDatabase('outbox: events fan out to deliveries in the same transaction', (h) => {
  let acc: TestAccount;
  const hooks: Record<string, string> = {};
  before(async () => {
    acc = await h.account();
    hooks.all = await addHook(h, acc.id, ['*']);
    hooks.created = await addHook(h, acc.id, ['data.created', 'user.created']);
    hooks.deleted = await addHook(h, acc.id, ['data.deleted']);
    hooks.disabled = await addHook(h, acc.id, ['*'], 'disabled');
    const other = await h.account();
    hooks.otherAccount = await addHook(h, other.id, ['*']);
  });

  it('creates one pending delivery per active subscribed webhook of the account, due at once', async () => {
    const at = new Date().toISOString();
    const eventId = await h.database.db
      .transaction()
      .execute((trx) =>
        recordEvent(
          trx,
          h.database.dialect,
          acc.id,
          'data.created',
          { id: 'dat_x', title: 't', type: 'note' },
          at,
        ),
      );
    const rows = await deliveriesFor(h, eventId);
    assert.deepEqual(rows.map((r) => r.webhook_id).sort(), [hooks.all, hooks.created].sort());
    for (const r of rows) {
      assert.match(r.id, /^whd_/);
      assert.equal(r.account_id, acc.id);
      assert.equal(r.event_name, 'data.created');
      assert.equal(r.status, 'pending');
      assert.equal(r.next_attempt_at, at);
      assert.equal(Number(r.attempt_count), 0);
    }
    const ev = await h.database.db
      .selectFrom('events')
      .select('payload')
      .where('id', '=', eventId)
      .executeTakeFirstOrThrow();
    assert.deepEqual(JSON.parse(ev.payload), {
      id: eventId,
      event: 'data.created',
      timestamp: at,
      account_id: acc.id,
      data: { id: 'dat_x', title: 't', type: 'note' },
    });
  });

  it('leaves neither event nor deliveries behind when the transaction rolls back', async () => {
    let eventId = '';
    await assert.rejects(
      h.database.db.transaction().execute(async (trx) => {
        eventId = await recordEvent(
          trx,
          h.database.dialect,
          acc.id,
          'data.deleted',
          { id: 'dat_y' },
          new Date().toISOString(),
        );
        throw new Error('the change failed');
      }),
      /the change failed/,
    );
    assert.match(eventId, /^evt_/);
    assert.deepEqual(await deliveriesFor(h, eventId), []);
    const ev = await h.database.db.selectFrom('events').select('id').where('id', '=', eventId).execute();
    assert.deepEqual(ev, []);
  });

  it('delivers an event only to the webhooks that subscribed to it (here only "*")', async () => {
    const eventId = await h.database.db
      .transaction()
      .execute((trx) =>
        recordEvent(
          trx,
          h.database.dialect,
          acc.id,
          'user.deleted',
          { id: 'usr_z' },
          new Date().toISOString(),
        ),
      );
    assert.deepEqual(
      (await deliveriesFor(h, eventId)).map((r) => r.webhook_id),
      [hooks.all],
    );
  });

  it('wakes delivery workers once deliveries are committed', async () => {
    let wakes = 0;
    const bump = () => {
      wakes += 1;
    };
    const stopLocal = onDeliveriesDue(bump);
    const listener =
      h.config.database.dialect === 'postgres'
        ? listenForDeliveries(h.config.database.url, bump, () => {})
        : null;
    try {
      await listener?.ready;
      const base = wakes; // a fresh LISTEN connection announces itself once
      await h.database.db
        .transaction()
        .execute((trx) =>
          recordEvent(
            trx,
            h.database.dialect,
            acc.id,
            'data.created',
            { id: 'dat_w' },
            new Date().toISOString(),
          ),
        );
      await waitUntil('a wake-up', () => wakes > base);
    } finally {
      stopLocal();
      await listener?.close();
    }
  });

  if (h.dialect === 'postgres')
    it('takes one round trip to PostgreSQL without a subscribed webhook, and one more with any', async () => {
      const quiet = await h.account();
      const busy = await h.account();
      await addHook(h, busy.id, ['data.created']);
      await addHook(h, busy.id, ['*']);
      /** The statements `recordEvent` sends, each one round trip, as the driver submits them. */
      const sent = async (accountId: string) => {
        const texts: string[] = [];
        const query = pgDriver().Query.prototype as unknown as { submit: (...a: unknown[]) => unknown };
        const submit = query.submit;
        let eventId = '';
        await h.database.db.transaction().execute(async (trx) => {
          query.submit = function (this: { text: string }, ...args: unknown[]) {
            texts.push(this.text);
            return submit.apply(this, args);
          };
          try {
            eventId = await recordEvent(
              trx,
              h.database.dialect,
              accountId,
              'data.created',
              { id: 'dat_rt' },
              new Date().toISOString(),
            );
          } finally {
            query.submit = submit;
          }
        });
        return { texts, deliveries: (await deliveriesFor(h, eventId)).length };
      };
      // The event's insert and the webhook lookup in one statement (they were two)...
      const none = await sent(quiet.id);
      assert.equal(none.texts.length, 1, none.texts.join('\n'));
      assert.equal(none.deliveries, 0);
      // The insert in front of the lookup ran: the event is there.
      const events = await h.database.db
        .selectFrom('events')
        .select(['name', 'payload'])
        .where('account_id', '=', quiet.id)
        .execute();
      assert.deepEqual(
        events.map((e) => [e.name, JSON.parse(e.payload).data]),
        [['data.created', { id: 'dat_rt' }]],
      );
      // ...and the deliveries with their NOTIFY in one more (they were two).
      const two = await sent(busy.id);
      assert.equal(two.texts.length, 2, two.texts.join('\n'));
      assert.equal(two.deliveries, 2);
    });
});
