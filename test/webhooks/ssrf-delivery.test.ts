import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createDeliveryWorker, type DeliveryWorker } from '../../src/events/delivery-worker.ts';
import { newId } from '../../src/lib/ids.ts';
import { insertWebhook } from '../../src/modules/webhooks/repo.ts';
import { describeEachDatabase, type TestAccount } from '../helpers/harness.ts';
import { deliveriesOf, startReceiverWithCa, uniquePath, waitUntil } from './fixtures.ts';

const receiver = await startReceiverWithCa();
after(() => receiver.close());
const { rx } = receiver;

describeEachDatabase(
  'SSRF guard at delivery time',
  (h) => {
    let acc: TestAccount;
    let hookId: string;
    before(async () => {
      acc = await h.account('enterprise');
      // A name that passed registration but now resolves to loopback (DNS rebinding): stored as is.
      hookId = newId('webhook');
      const now = new Date().toISOString();
      await insertWebhook(h.database.db, {
        account_id: acc.id,
        id: hookId,
        url: rx.url + uniquePath('rebound'),
        events: JSON.stringify(['*']),
        sealed_secret: null,
        status: 'active',
        disabled_reason: null,
        created_at: now,
        updated_at: now,
      });
    });

    it('the test ping is refused before connecting and reported as a failed result', async () => {
      const before = rx.requests.length;
      const res = await h.request('POST', `/v1/webhooks/${hookId}/test`, { key: acc.adminKey });
      assert.equal(res.status, 200);
      assert.equal(res.body.data.success, false);
      assert.equal(res.body.data.status_code, null);
      assert.match(res.body.data.error, /resolves to a forbidden address/);
      assert.doesNotMatch(res.body.data.error, /\d+\.\d+\.\d+\.\d+|::1/, 'the address is not named');
      assert.equal(rx.requests.length, before, 'the receiver never saw a request');
    });

    describe('with a running delivery worker', () => {
      let worker: DeliveryWorker;
      before(async () => {
        worker = createDeliveryWorker(h.ctx);
        await worker.ready;
      });
      after(() => worker.stop());

      it('records each refused attempt as a failure and never reaches the receiver', async () => {
        const before = rx.requests.length;
        await h.request('POST', '/v1/data', { key: acc.adminKey, body: { title: 'x', type: 'note' } });
        const d = await waitUntil('the delivery to fail', async () => {
          const [first] = await deliveriesOf(h, acc.adminKey, hookId);
          return first?.status === 'failed' && first;
        });
        assert.equal(d.attempts.length, 2);
        for (const a of d.attempts) {
          assert.equal(a.status_code, null);
          assert.match(a.error, /forbidden address/);
        }
        assert.equal(rx.requests.length, before);
      });
    });
  },
  {
    env: {
      ADS_WEBHOOK_ALLOW_PRIVATE: 'false',
      ADS_WEBHOOK_CA_FILE: receiver.caFile,
      ADS_WEBHOOK_RETRY_SCHEDULE: '0.2',
      ADS_WEBHOOK_TIMEOUT_MS: '3000',
    },
  },
);
