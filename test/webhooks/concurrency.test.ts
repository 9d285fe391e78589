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
// open at once, so the most it ever sees open is how many attempts one worker runs in parallel.
// HOLD_MS only breaks a deadlock of a broken worker (past the 10 s attempt deadline): a correct one
// is released by the count, however slowly its TLS connections open.
const DEFAULT_CONCURRENCY = 64;
const HOLD_MS = 15_000;
const EVENTS = DEFAULT_CONCURRENCY + 20;

describeEachDatabase(
  'webhook deliveries: attempts in parallel',
  (h) => {
    const w = withDeliveryWorker(h);

    /** Holds each request on a held path until `open` reach `until` (or HOLD_MS pass); counts them. */
    const holding = (held: (url: string) => boolean, until: number) => {
      const state = {
        open: 0,
        most: 0,
      };
      let release: () => void = () => {};
      let released = new Promise<void>((resolve) => {
        release = resolve;
      });
      rx.setHandler(async (req) => {
        if (!held(req.url)) return { status: 204 };
        state.open++;
        state.most = Math.max(state.most, state.open);
        if (state.open >= until) release();
        // Held until released when `until` is unbounded: no timer decides what the test sees.
        await (until === Number.POSITIVE_INFINITY
          ? released
          : Promise.race([released, sleep(HOLD_MS, undefined, { ref: false })]));
        state.open--;
        return { status: 204 };
      });
      const releaseAll = () => {
        released = Promise.resolve();
        release();
      };
      return { state, releaseAll };
    };
    const create = async (key: string, n: number, label: string) =>
      Promise.all(
        Array.from({ length: n }, async (_, i) => {
          const res = await h.request('POST', '/v1/data', {
            key,
            body: { title: `${label} ${i}`, type: 'note' },
          });
          assert.equal(res.status, 201, res.raw);
        }),
      );

    it(`one worker runs ${DEFAULT_CONCURRENCY} attempts at once, and no more`, async () => {
      // Four tenants' webhooks, so no share (56 per webhook and per account) binds.
      const paths: string[] = [];
      const tenants = [
        w.acc,
        await h.account('enterprise'),
        await h.account('enterprise'),
        await h.account('enterprise'),
      ];
      for (const acc of tenants) {
        const p = uniquePath('parallel');
        paths.push(p);
        await registerWebhook(h, acc, { url: rx.url + p, events: ['data.created'] });
      }
      const { state, releaseAll } = holding((url) => paths.includes(url), DEFAULT_CONCURRENCY);
      await Promise.all(tenants.map((acc, i) => create(acc.adminKey, EVENTS / 4, `parallel ${i}`)));
      // 84 TLS attempts took over 20 s on a slow, loaded machine (2026-11-25).
      await waitUntil(
        `${EVENTS} deliveries`,
        () => paths.reduce((n, p) => n + requestsTo(rx, p).length, 0) >= EVENTS,
        90_000,
      );
      releaseAll();
      assert.equal(state.most, DEFAULT_CONCURRENCY);
    });

    it("keeps a tenant whose receivers hang to its share: another tenant's delivery goes out at once", async () => {
      // One account, three webhooks that hold every request, 40 events: 120 attempts that would
      // fill all 64 slots for HOLD_MS at a time. An account's share is 56: 8 slots stay free.
      const hung = await h.account('enterprise');
      const hungPaths = [uniquePath('hung'), uniquePath('hung'), uniquePath('hung')];
      for (const p of hungPaths)
        await registerWebhook(h, hung, { url: rx.url + p, events: ['data.created'] });
      const { state, releaseAll } = holding((url) => hungPaths.includes(url), Number.POSITIVE_INFINITY);
      try {
        await create(hung.adminKey, 40, 'flood');
        await waitUntil('the hung tenant to fill its share', () => state.open >= 56, 20_000);
        const other = await h.account('enterprise');
        const p = uniquePath('healthy');
        await registerWebhook(h, other, { url: rx.url + p, events: ['data.created'] });
        await create(other.adminKey, 1, 'healthy');
        await waitUntil("the other tenant's delivery", () => requestsTo(rx, p).length === 1, 30_000);
        // Every hung request is still held, and no hung attempt has ended on the worker's side
        // either (its 10 s deadline would record one): the delivery did not wait for a slot.
        assert.equal(state.open, 56);
        const attempts = await h.database.db
          .selectFrom('webhook_deliveries')
          .select((eb) => eb.fn.sum<number>('attempt_count').as('n'))
          .where('account_id', '=', hung.id)
          .executeTakeFirstOrThrow();
        assert.equal(Number(attempts.n), 0, 'it did not wait for a hung attempt to end');
        assert.equal(state.most, 56, 'the hung account held its share of the slots, no more');
      } finally {
        releaseAll();
      }
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
