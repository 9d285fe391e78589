import assert from 'node:assert/strict';
import { it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { describeEachDatabase } from '../helpers/harness.ts';
import {
  fileReceiver,
  registerWebhook,
  requestsTo,
  uniquePath,
  waitUntil,
  withDeliveryWorker,
} from './fixtures.ts';

const receiver = await fileReceiver();
const { rx } = receiver;

// The documented default (docs/webhooks.md). The receiver holds every request until that many are
// open at once (or HOLD_MS pass), so the most it ever sees open is how many attempts one worker
// runs in parallel.
const DEFAULT_CONCURRENCY = 64;
const HOLD_MS = 4_000;
const EVENTS = DEFAULT_CONCURRENCY + 20;

describeEachDatabase(
  'webhook deliveries: attempts in parallel',
  (h) => {
    const w = withDeliveryWorker(h);

    it(`one worker runs ${DEFAULT_CONCURRENCY} attempts at once, and no more`, async () => {
      const p = uniquePath('parallel');
      let open = 0;
      let most = 0;
      let release: () => void = () => {};
      let released = new Promise<void>((resolve) => {
        release = resolve;
      });
      rx.setHandler(async () => {
        open++;
        most = Math.max(most, open);
        if (open >= DEFAULT_CONCURRENCY) release();
        await Promise.race([released, sleep(HOLD_MS)]);
        open--;
        return { status: 204 };
      });
      await registerWebhook(h, w.acc, { url: rx.url + p, events: ['data.created'] });
      await Promise.all(
        Array.from({ length: EVENTS }, async (_, i) => {
          const res = await h.request('POST', '/v1/data', {
            key: w.acc.adminKey,
            body: { title: `parallel ${i}`, type: 'note' },
          });
          assert.equal(res.status, 201, res.raw);
        }),
      );
      // 84 TLS attempts took over 20 s on a slow, loaded machine (2026-11-25).
      await waitUntil(`${EVENTS} deliveries`, () => requestsTo(rx, p).length >= EVENTS, 90_000);
      released = Promise.resolve();
      assert.equal(most, DEFAULT_CONCURRENCY);
    });
  },
  {
    env: {
      ADS_WEBHOOK_ALLOW_PRIVATE: 'true',
      ADS_WEBHOOK_CA_FILE: receiver.caFile,
      ADS_WEBHOOK_TIMEOUT_MS: '10000',
    },
  },
);
