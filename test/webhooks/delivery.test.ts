import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { createDeliveryWorker } from '../../src/events/delivery-worker.ts';
import { recordEvent } from '../../src/events/outbox.ts';
import { describeEachDatabase } from '../helpers/harness.ts';
import type { ReceivedRequest } from '../helpers/https-receiver.ts';
import {
  deliveriesOf,
  fileReceiver,
  registerWebhook,
  requestsTo,
  uniquePath,
  waitUntil,
  withDeliveryWorker,
} from './fixtures.ts';

const receiver = await fileReceiver();
const { rx } = receiver;

const SECRET = 'whsec-delivery-test-🔑-0123456789';
const header = (r: ReceivedRequest, name: string) => r.headers[name] as string | undefined;

describeEachDatabase(
  'webhook deliveries: payloads, headers and signatures',
  (h) => {
    describe('with a running delivery worker', () => {
      const w = withDeliveryWorker(h);

      it('delivers every event type with the stored payload, both signatures and stable ids', async () => {
        const allPath = uniquePath('all');
        const allId = await registerWebhook(h, w.acc, {
          url: rx.url + allPath,
          events: ['*'],
          secret: SECRET,
        });

        const created = await h.request('POST', '/v1/data', {
          key: w.acc.adminKey,
          body: { title: 'Plan', type: 'note', content: 'x' },
        });
        const dataId = created.body.data.id;
        await h.request('PATCH', `/v1/data/${dataId}`, { key: w.acc.adminKey, body: { title: 'Plan B' } });
        await h.request('DELETE', `/v1/data/${dataId}`, { key: w.acc.adminKey });
        const invited = await h.request('POST', '/v1/users', {
          key: w.acc.adminKey,
          body: { email: 'new.member@example.com', role: 'member' },
        });
        assert.equal(invited.status, 201);
        const userId = invited.body.data.id;
        await h.request('PATCH', `/v1/users/${userId}`, { key: w.acc.adminKey, body: { role: 'admin' } });
        await h.request('DELETE', `/v1/users/${userId}`, { key: w.acc.adminKey });
        // An event recorded directly, as any module does inside its own transaction.
        const directId = await h.database.db
          .transaction()
          .execute((trx) =>
            recordEvent(
              trx,
              h.database.dialect,
              w.acc.id,
              'user.created',
              { id: 'usr_direct', email: 'd@example.com', role: 'member', status: 'invited' },
              new Date().toISOString(),
            ),
          );

        const got = await waitUntil('7 deliveries', () => {
          const r = requestsTo(rx, allPath);
          return r.length >= 7 && r;
        });
        const stored = await h.database.db
          .selectFrom('events')
          .select(['id', 'name', 'payload'])
          .where('account_id', '=', w.acc.id)
          .execute();
        const log = await deliveriesOf(h, w.acc.adminKey, allId);
        assert.equal(log.length, 7);
        const verifier = new Webhook(Buffer.from(SECRET, 'utf8').toString('base64'));

        for (const r of got) {
          const payload = JSON.parse(r.body);
          const event = stored.find((e) => e.id === payload.id);
          assert.ok(event, `payload id ${payload.id} is a stored event`);
          assert.equal(r.body, event.payload, 'the raw body is exactly the stored payload');
          assert.deepEqual(Object.keys(payload), ['id', 'event', 'timestamp', 'account_id', 'data']);
          assert.equal(payload.account_id, w.acc.id);
          assert.match(payload.timestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
          assert.equal(r.method, 'POST');
          assert.equal(header(r, 'content-type'), 'application/json');
          assert.equal(header(r, 'x-service-event'), payload.event);
          const delivery = log.find((d) => d.id === header(r, 'x-service-delivery'));
          assert.ok(delivery, 'X-Service-Delivery names a delivery of the log');
          assert.equal(delivery.event_id, payload.id);
          assert.equal(delivery.event, payload.event);
          assert.equal(header(r, 'webhook-id'), payload.id);
          const expected = createHmac('sha256', SECRET).update(r.body).digest('hex');
          assert.equal(header(r, 'x-service-signature'), expected);
          assert.deepEqual(verifier.verify(r.body, r.headers as Record<string, string>), payload);
          const ts = Number(header(r, 'webhook-timestamp'));
          assert.ok(Math.abs(ts - Date.now() / 1000) < 300, 'fresh webhook-timestamp');
        }

        const byEvent = new Map(got.map((r) => [JSON.parse(r.body).id as string, JSON.parse(r.body)]));
        const dataEvents = [...byEvent.values()].filter((p) => p.data.id === dataId);
        assert.deepEqual(dataEvents.map((p) => p.event).sort(), [
          'data.created',
          'data.deleted',
          'data.updated',
        ]);
        for (const p of dataEvents) {
          const expected: Record<string, unknown> = {
            id: dataId,
            title: p.event === 'data.created' ? 'Plan' : 'Plan B',
            type: 'note',
          };
          if (p.event === 'data.updated') expected.changed = ['title'];
          assert.deepEqual(p.data, expected, p.event);
        }
        const userEvents = [...byEvent.values()].filter((p) => p.data.id === userId);
        assert.deepEqual(userEvents.map((p) => p.event).sort(), [
          'user.created',
          'user.deleted',
          'user.updated',
        ]);
        for (const p of userEvents) {
          const keys = ['email', 'id', 'role', 'status', ...(p.event === 'user.updated' ? ['changed'] : [])];
          assert.deepEqual(Object.keys(p.data).sort(), keys.sort(), p.event);
          assert.equal(p.data.email, 'new.member@example.com');
        }
        assert.deepEqual(byEvent.get(directId)?.data, {
          id: 'usr_direct',
          email: 'd@example.com',
          role: 'member',
          status: 'invited',
        });
        await waitUntil('succeeded log', async () =>
          (await deliveriesOf(h, w.acc.adminKey, allId)).every((d) => d.status === 'succeeded'),
        );
        const done = await deliveriesOf(h, w.acc.adminKey, allId);
        for (const d of done) {
          assert.equal(d.attempts.length, 1);
          assert.equal(d.attempts[0].status_code, 200);
          assert.equal(d.attempts[0].error, null);
          assert.equal(d.next_attempt_at, null);
        }
      });

      it('sends only subscribed events, and no signature headers without a secret', async () => {
        const p = uniquePath('deleted-only');
        await registerWebhook(h, w.acc, { url: rx.url + p, events: ['data.deleted'] });
        const one = await h.request('POST', '/v1/data', {
          key: w.acc.adminKey,
          body: { title: 'A', type: 'note' },
        });
        await h.request('POST', '/v1/data', { key: w.acc.adminKey, body: { title: 'B', type: 'note' } });
        await h.request('DELETE', `/v1/data/${one.body.data.id}`, { key: w.acc.adminKey });
        const [r] = await waitUntil('the data.deleted delivery', () => {
          const got = requestsTo(rx, p);
          return got.length >= 1 && got;
        });
        assert.ok(r);
        assert.equal(JSON.parse(r.body).event, 'data.deleted');
        assert.equal(header(r, 'x-service-signature'), undefined);
        assert.equal(header(r, 'webhook-signature'), undefined);
        assert.equal(header(r, 'webhook-id'), JSON.parse(r.body).id);
        // A later event proves the two creations were not merely still in flight.
        const marker = await h.request('POST', '/v1/data', {
          key: w.acc.adminKey,
          body: { title: 'C', type: 'note' },
        });
        await h.request('DELETE', `/v1/data/${marker.body.data.id}`, { key: w.acc.adminKey });
        await waitUntil('the second data.deleted', () => requestsTo(rx, p).length >= 2);
        assert.deepEqual(
          requestsTo(rx, p).map((x) => JSON.parse(x.body).event),
          ['data.deleted', 'data.deleted'],
        );
      });
    });

    it('stops cleanly when stop() is called twice, at once or after it finished', async () => {
      const worker = createDeliveryWorker(h.ctx);
      await worker.ready;
      const first = worker.stop();
      const second = worker.stop();
      assert.equal(second, first, 'a second stop() waits for the same shutdown');
      await Promise.all([first, second]);
      const after = worker.stop();
      assert.equal(after, first, 'and after it finished, resolves at once with it');
      await after;
    });
  },
  {
    env: {
      ADS_WEBHOOK_ALLOW_PRIVATE: 'true',
      ADS_WEBHOOK_CA_FILE: receiver.caFile,
      ADS_WEBHOOK_RETRY_SCHEDULE: '0.2,0.4',
      ADS_WEBHOOK_TIMEOUT_MS: '3000',
    },
  },
);
