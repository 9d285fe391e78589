import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { createDeliveryWorker, type DeliveryWorker } from '../../src/events/delivery-worker.ts';
import { createDeliveryDispatcher } from '../../src/events/dispatcher.ts';
import { verifyServiceSignature } from '../../src/events/signing.ts';
import { createSecretBox } from '../../src/lib/secret-box.ts';
import { describeEachDatabase, type TestAccount } from '../helpers/harness.ts';
import {
  deliveriesOf,
  fileReceiver,
  registerWebhook,
  requestsTo,
  routeByPath,
  uniquePath,
  waitUntil,
} from './fixtures.ts';

const receiver = await fileReceiver();
const { rx } = receiver;
const answer = routeByPath(rx);

describeEachDatabase(
  'webhook lifecycle: delivery log, manual retry, deletion, test ping',
  (h) => {
    let acc: TestAccount;
    before(async () => {
      acc = await h.account('enterprise');
    });
    const createData = (title: string) =>
      h.request('POST', '/v1/data', { key: acc.adminKey, body: { title, type: 'note' } });

    describe('with a running delivery worker', () => {
      let worker: DeliveryWorker;
      before(async () => {
        worker = createDeliveryWorker(h.ctx);
        await worker.ready;
      });
      after(() => worker.stop());

      it('lists deliveries newest first, filters by status, and retries a failed one by hand', async () => {
        const p = uniquePath('log');
        let failing = true;
        answer(p, () => ({ status: failing ? 500 : 200 }));
        const id = await registerWebhook(h, acc, { url: rx.url + p, events: ['data.created'] });
        const base = Date.now();
        for (const [i, title] of ['one', 'two', 'three'].entries()) {
          h.clock.now = base + i; // distinct creation times, so "newest first" is well defined
          await createData(title);
        }
        h.clock.now = null;
        const failed = await waitUntil('the webhook to be disabled', async () => {
          const log = await deliveriesOf(h, acc.adminKey, id);
          return log.length === 3 && log.every((d) => d.status === 'failed') && log;
        });
        const titles = await Promise.all(
          failed.map(async (d) => {
            const ev = await h.database.db
              .selectFrom('events')
              .select('payload')
              .where('id', '=', d.event_id)
              .executeTakeFirstOrThrow();
            return JSON.parse(ev.payload).data.title;
          }),
        );
        assert.deepEqual(titles, ['three', 'two', 'one'], 'newest first');
        for (const d of failed) {
          assert.match(d.id, /^whd_/);
          assert.match(d.event_id, /^evt_/);
          assert.equal(d.event, 'data.created');
          assert.equal(d.next_attempt_at, null);
        }
        const hook = (await h.request('GET', `/v1/webhooks/${id}`, { key: acc.adminKey })).body.data;
        assert.equal(hook.status, 'disabled');

        const target = failed[2];
        const retryUrl = `/v1/webhooks/${id}/deliveries/${target.id}/retry`;
        const refused = await h.request('POST', retryUrl, { key: acc.adminKey });
        assert.equal(refused.status, 400, 'a disabled webhook must be re-enabled first');
        assert.match(refused.body.error.message, /re-enable/);

        await h.request('PATCH', `/v1/webhooks/${id}`, { key: acc.adminKey, body: { status: 'active' } });
        const attemptsBefore = target.attempts.length;
        const again = await h.request('POST', retryUrl, { key: acc.adminKey });
        assert.equal(again.status, 202);
        assert.equal(again.body.data.id, target.id);
        const stillFailing = await waitUntil('the manual attempt', async () => {
          const d = (await deliveriesOf(h, acc.adminKey, id)).find((x) => x.id === target.id);
          return d.attempts.length === attemptsBefore + 1 && d.status !== 'pending' && d;
        });
        assert.equal(stillFailing.status, 'failed', 'a failed manual retry ends the delivery again');
        const afterManual = (await h.request('GET', `/v1/webhooks/${id}`, { key: acc.adminKey })).body.data;
        assert.equal(afterManual.status, 'active', 'a failed manual retry does not disable the webhook');

        failing = false;
        assert.equal((await h.request('POST', retryUrl, { key: acc.adminKey })).status, 202);
        const delivered = await waitUntil('the second manual attempt', async () => {
          const d = (await deliveriesOf(h, acc.adminKey, id)).find((x) => x.id === target.id);
          return d.status === 'succeeded' && d;
        });
        assert.equal(delivered.attempts.length, attemptsBefore + 2);
        assert.equal(delivered.attempts.at(-1).status_code, 200);

        const onlyFailed = await h.request('GET', `/v1/webhooks/${id}/deliveries?status=failed`, {
          key: acc.adminKey,
        });
        assert.deepEqual(
          onlyFailed.body.data.deliveries.map((d: { id: string }) => d.id),
          [failed[0].id, failed[1].id],
        );
        assert.equal(onlyFailed.body.data.total, 2);
        const page = await h.request('GET', `/v1/webhooks/${id}/deliveries?limit=1&page=3`, {
          key: acc.adminKey,
        });
        assert.deepEqual([page.body.data.deliveries[0].id, page.body.meta.pages], [target.id, 3]);
        const bad = await h.request('GET', `/v1/webhooks/${id}/deliveries?status=lost`, {
          key: acc.adminKey,
        });
        assert.equal(bad.status, 400);
      });

      it('sends nothing more to a deleted webhook, not even retries already scheduled', async () => {
        const gone = uniquePath('deleted');
        answer(gone, () => ({ status: 503 }));
        const goneId = await registerWebhook(h, acc, { url: rx.url + gone, events: ['data.created'] });
        await createData('before delete');
        await waitUntil('the first failed attempt', () => requestsTo(rx, gone).length >= 1);
        const del = await h.request('DELETE', `/v1/webhooks/${goneId}`, { key: acc.adminKey });
        assert.equal(del.status, 204);
        const left = await h.database.db
          .selectFrom('webhook_deliveries')
          .select('id')
          .where('webhook_id', '=', goneId)
          .execute();
        assert.deepEqual(left, [], 'its deliveries were cancelled with it');
        const seenAtDelete = requestsTo(rx, gone).length;

        // A witness that fails twice first: its success comes after two retry steps (0.6 s), by when
        // the deleted webhook's retry (0.2 s after its first attempt) would long have been sent.
        const witness = uniquePath('witness');
        answer(witness, (n) => ({ status: n <= 2 ? 503 : 200 }));
        await registerWebhook(h, acc, { url: rx.url + witness, events: ['data.created'] });
        await createData('after delete');
        await waitUntil('the witness to succeed', () => requestsTo(rx, witness).length >= 3);
        assert.equal(requestsTo(rx, gone).length, seenAtDelete);
      });
    });

    it('stop() lets an attempt in flight finish and records it', async () => {
      const p = uniquePath('graceful');
      answer(p, (n) => ({ status: 200, delayMs: n === 1 ? 400 : 0 }));
      const id = await registerWebhook(h, acc, { url: rx.url + p, events: ['data.created'] });
      const worker = createDeliveryWorker(h.ctx);
      try {
        await worker.ready;
        await createData('in flight');
        await waitUntil('the attempt to be in flight', () => requestsTo(rx, p).length === 1);
      } finally {
        await worker.stop();
      }
      const [d] = await deliveriesOf(h, acc.adminKey, id);
      assert.equal(d.status, 'succeeded', 'the answer arrived before stop() resolved');
      assert.equal(d.attempts.length, 1);
    });

    // docs/webhooks.md: SIGTERM "lets attempts under way finish before the process exits, and starts
    // no new one". With a backlog the loop waits for slots to free; stop() ended that wait, and the
    // loop then claimed and started more.
    it('stop() during a backlog starts no new attempt, and gives back what it had claimed', async () => {
      const p = uniquePath('backlog-stop');
      const id = await registerWebhook(h, acc, { url: rx.url + p, events: ['data.created'] });
      for (let i = 0; i < 20; i++) await createData(`backlog ${i}`);
      const dispatcher = createDeliveryDispatcher(h.ctx.config);
      let signalled = false;
      let startedAfter = 0;
      const dispatch = dispatcher.dispatch.bind(dispatcher);
      dispatcher.dispatch = (opts, handler) => {
        if (signalled) startedAfter++;
        return dispatch(opts, handler);
      };
      const worker = createDeliveryWorker(h.ctx, {
        concurrency: 4,
        perWebhook: 4,
        perAccount: 4,
        dispatcher,
      });
      // Three slow answers hold three slots; the fourth slot turns over fast, so the loop keeps
      // waiting (up to 50 ms) for a second slot to free before each claim. The signal comes 20 ms
      // after the sixth request, when one slot is free and the loop is in that wait.
      let stopped: Promise<void> | undefined;
      answer(p, (n) => {
        if (n === 6) {
          setTimeout(() => {
            signalled = true;
            stopped = worker.stop();
          }, 20);
        }
        return { status: 200, delayMs: n <= 3 ? 1500 : 0 };
      });
      try {
        await worker.ready;
        await waitUntil('the signal', () => stopped !== undefined);
        await stopped;
      } finally {
        await worker.stop();
        await dispatcher.close();
      }
      assert.equal(startedAfter, 0, 'attempts begun after stop()');
      const waiting = await h.database.db
        .selectFrom('webhook_deliveries')
        .select(['claim_token', 'next_attempt_at'])
        .where('webhook_id', '=', id)
        .where('status', '=', 'pending')
        .execute();
      assert.ok(waiting.length > 0, 'some of the backlog is still waiting');
      for (const d of waiting) {
        assert.equal(d.claim_token, null, 'not held by the stopped worker');
        assert.ok(Date.parse(String(d.next_attempt_at)) <= Date.now(), 'due now, not when a lease ends');
      }
    });

    it('test ping: sends a signed webhook.test now and reports status code and latency', async () => {
      const p = uniquePath('ping');
      answer(p, () => ({ status: 202 }));
      const secret = 'ping-secret';
      const id = await registerWebhook(h, acc, { url: rx.url + p, events: ['data.deleted'], secret });
      const res = await h.request('POST', `/v1/webhooks/${id}/test`, { key: acc.adminKey });
      assert.equal(res.status, 200);
      const r = res.body.data;
      assert.deepEqual([r.success, r.status_code, r.error], [true, 202, null]);
      assert.ok(Number.isInteger(r.latency_ms) && r.latency_ms >= 0);
      const [got] = requestsTo(rx, p);
      assert.ok(got);
      const payload = JSON.parse(got.body);
      assert.deepEqual(payload, {
        id: r.event_id,
        event: 'webhook.test',
        timestamp: payload.timestamp,
        account_id: acc.id,
        data: { webhook_id: id },
      });
      assert.equal(got.headers['x-service-event'], 'webhook.test');
      assert.match(String(got.headers['x-service-delivery']), /^whd_/);
      assert.ok(verifyServiceSignature(got.body, secret, got.headers['x-service-signature']));
      new Webhook(Buffer.from(secret).toString('base64')).verify(
        got.body,
        got.headers as Record<string, string>,
      );
      assert.deepEqual(await deliveriesOf(h, acc.adminKey, id), [], 'a ping is not a stored delivery');
    });

    it('a secret sealed under another ADS_SECRET_KEY: nothing is sent unsigned, ping and delivery say why', async () => {
      const p = uniquePath('other-key');
      answer(p, () => ({ status: 200 }));
      const id = await registerWebhook(h, acc, { url: rx.url + p, events: ['data.created'], secret: 's' });
      // What a process started with another key finds: a value it cannot open.
      await h.database.db
        .updateTable('webhooks')
        .set({ sealed_secret: createSecretBox(randomBytes(32)).seal('s') })
        .where('id', '=', id)
        .execute();
      const ping = await h.request('POST', `/v1/webhooks/${id}/test`, { key: acc.adminKey });
      assert.equal(ping.status, 200, ping.raw);
      assert.deepEqual([ping.body.data.success, ping.body.data.status_code], [false, null]);
      assert.match(ping.body.data.error, /^cannot sign: .*another key/);

      const worker = createDeliveryWorker(h.ctx);
      await worker.ready;
      try {
        await createData('signed elsewhere');
        const [delivery] = await waitUntil('an attempt', async () => {
          const log = await deliveriesOf(h, acc.adminKey, id);
          return log.length === 1 && log[0].attempts.length > 0 && log;
        });
        assert.equal(delivery.attempts[0].status_code, null);
        assert.match(delivery.attempts[0].error, /^cannot sign: /);
      } finally {
        await worker.stop();
      }
      assert.equal(requestsTo(rx, p).length, 0, 'nothing reached the receiver');
    });

    it('test ping: a failing or unreachable receiver is a 200 result describing the failure', async () => {
      const p = uniquePath('ping-fail');
      answer(p, () => ({ status: 500 }));
      const failing = await registerWebhook(h, acc, { url: rx.url + p, events: ['*'] });
      const res = await h.request('POST', `/v1/webhooks/${failing}/test`, { key: acc.adminKey });
      assert.equal(res.status, 200);
      assert.deepEqual([res.body.data.success, res.body.data.status_code], [false, 500]);
      assert.equal(res.body.data.error, 'receiver answered 500');

      // Port 1 on loopback: nothing listens there.
      const closed = await registerWebhook(h, acc, { url: 'https://127.0.0.1:1/hook', events: ['*'] });
      const refused = await h.request('POST', `/v1/webhooks/${closed}/test`, { key: acc.adminKey });
      assert.equal(refused.status, 200);
      assert.equal(refused.body.data.success, false);
      assert.equal(refused.body.data.status_code, null);
      assert.match(refused.body.data.error, /ECONNREFUSED/);
    });

    it('test ping: 410 Gone is reported, and neither disables the webhook nor is retried', async () => {
      const p = uniquePath('ping-gone');
      answer(p, () => ({ status: 410 }));
      const id = await registerWebhook(h, acc, { url: rx.url + p, events: ['data.deleted'] });
      const res = await h.request('POST', `/v1/webhooks/${id}/test`, { key: acc.adminKey });
      assert.deepEqual([res.body.data.success, res.body.data.status_code], [false, 410]);
      const hook = await h.request('GET', `/v1/webhooks/${id}`, { key: acc.adminKey });
      assert.deepEqual([hook.body.data.status, hook.body.data.disabled_reason], ['active', null]);
      assert.deepEqual(await deliveriesOf(h, acc.adminKey, id), [], 'nothing stored to retry');
      assert.equal(requestsTo(rx, p).length, 1);
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
