import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { createDeliveryWorker, type DeliveryWorker } from '../../src/events/delivery-worker.ts';
import { postgresSkipReason } from '../helpers/databases.ts';
import { createHarness } from '../helpers/harness.ts';
import { stepInBefore } from '../helpers/pg-step-in.ts';
import { fileReceiver, registerWebhook, requestsTo, uniquePath } from './fixtures.ts';

// SIGTERM (the worker's stop()) arriving while a claim query runs: the claimed deliveries are given
// back unattempted and due at once, for another worker, instead of waiting out their leases.
// PostgreSQL only: the test steps in as the claim statement is sent, through the pg client.

const receiver = await fileReceiver();

describe('delivery worker stopped during a claim [postgres]', { skip: postgresSkipReason() }, () => {
  const h = createHarness('postgres', {
    ADS_WEBHOOK_ALLOW_PRIVATE: 'true',
    ADS_WEBHOOK_CA_FILE: receiver.caFile,
  });
  before(() => h.setup());
  after(() => h.teardown());

  it('gives the claimed deliveries back, due now and unattempted, and sends nothing', async () => {
    const acc = await h.account('enterprise');
    const p = uniquePath('stop-claim');
    await registerWebhook(h, acc, { url: receiver.rx.url + p, events: ['data.created'] });
    for (const title of ['one', 'two', 'three']) {
      const res = await h.request('POST', '/v1/data', { key: acc.adminKey, body: { title, type: 'note' } });
      assert.equal(res.status, 201);
    }
    let worker: DeliveryWorker | undefined;
    let stopped: Promise<void> | undefined;
    // stop() as the claim statement goes out: the claim still returns its rows.
    stepInBefore(/for update skip locked/, () => {
      stopped = worker?.stop();
    });
    worker = createDeliveryWorker(h.ctx, { listen: false });
    await worker.ready;
    while (stopped === undefined) await new Promise((r) => setTimeout(r, 5));
    await stopped;
    const { rows } = await sql<{
      status: string;
      claim_token: string | null;
      locked_until: unknown;
      attempt_count: number;
      due: boolean;
    }>`select status, claim_token, locked_until, attempt_count, next_attempt_at <= now() as due
      from webhook_deliveries where account_id = ${acc.id}`.execute(h.database.db);
    assert.equal(rows.length, 3);
    for (const row of rows) {
      assert.deepEqual(
        { ...row, attempt_count: Number(row.attempt_count) },
        { status: 'pending', claim_token: null, locked_until: null, attempt_count: 0, due: true },
      );
    }
    assert.deepEqual(requestsTo(receiver.rx, p), [], 'nothing sent');
  });
});
