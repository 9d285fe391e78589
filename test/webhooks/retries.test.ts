import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { describeEachDatabase } from '../helpers/harness.ts';
import {
  deliveriesOf,
  fileReceiver,
  registerWebhook,
  requestsTo,
  routeByPath,
  uniquePath,
  waitUntil,
  withDeliveryWorker,
} from './fixtures.ts';

const receiver = await fileReceiver();
const { rx } = receiver;
const answer = routeByPath(rx);

// The last step is the longest: a Retry-After up to it is honoured, a longer one is cut to it.
const SCHEDULE = [0.2, 0.4, 0.4, 0.4, 1];
const SECRET = 'retry-secret';
const TIMEOUT_MS = 3000;
const gap = (a: { at: string }, b: { at: string }) => Date.parse(b.at) - Date.parse(a.at);

describeEachDatabase(
  'webhook retries, Retry-After, 410 and disabling',
  (h) => {
    describe('with a running delivery worker', () => {
      const w = withDeliveryWorker(h);

      /** A webhook on a fresh path answered by `respond`, and one data.created event for it. */
      const setup = async (respond: Parameters<typeof answer>[1]) => {
        const p = uniquePath('retry');
        answer(p, respond);
        const id = await registerWebhook(h, w.acc, {
          url: rx.url + p,
          events: ['data.created'],
          secret: SECRET,
        });
        await h.request('POST', '/v1/data', { key: w.acc.adminKey, body: { title: 'R', type: 'note' } });
        return { p, id };
      };
      const finished = (id: string) =>
        waitUntil(`delivery of ${id} to finish`, async () => {
          const [d] = await deliveriesOf(h, w.acc.adminKey, id);
          return d && d.status !== 'pending' && d;
        });

      it('retries on the schedule, then fails the delivery and disables the webhook', async () => {
        const { p, id } = await setup(() => ({ status: 503 }));
        const d = await finished(id);
        assert.equal(d.status, 'failed');
        assert.equal(d.attempts.length, 6, 'the first attempt plus 5 retries');
        assert.equal(d.next_attempt_at, null);
        for (const a of d.attempts) {
          assert.equal(a.status_code, 503);
          assert.equal(a.error, 'receiver answered 503');
          assert.ok(Number.isInteger(a.duration_ms) && a.duration_ms >= 0);
        }
        for (let i = 1; i < 6; i++) {
          assert.ok(
            gap(d.attempts[i - 1], d.attempts[i]) >= SCHEDULE[i - 1]! * 1000,
            `wait before retry ${i}`,
          );
        }
        const hook = (await h.request('GET', `/v1/webhooks/${id}`, { key: w.acc.adminKey })).body.data;
        assert.equal(hook.status, 'disabled');
        assert.match(hook.disabled_reason, /failed after 6 attempts/);

        const got = requestsTo(rx, p);
        assert.equal(got.length, 6);
        assert.equal(new Set(got.map((r) => r.headers['x-service-delivery'])).size, 1, 'stable delivery id');
        assert.equal(new Set(got.map((r) => r.headers['webhook-id'])).size, 1, 'stable webhook-id');
        const verifier = new Webhook(Buffer.from(SECRET).toString('base64'));
        for (const r of got) verifier.verify(r.body, r.headers as Record<string, string>);

        // A disabled webhook gets no deliveries for later events.
        await h.request('POST', '/v1/data', { key: w.acc.adminKey, body: { title: 'later', type: 'note' } });
        assert.equal((await deliveriesOf(h, w.acc.adminKey, id)).length, 1);
      });

      it('succeeds on a later attempt and keeps the webhook active', async () => {
        const { id } = await setup((n) => ({ status: n <= 2 ? 500 : 204 }));
        const d = await finished(id);
        assert.equal(d.status, 'succeeded');
        assert.deepEqual(
          d.attempts.map((a: { status_code: number }) => a.status_code),
          [500, 500, 204],
        );
        assert.equal(d.attempts[2].error, null);
        const hook = (await h.request('GET', `/v1/webhooks/${id}`, { key: w.acc.adminKey })).body.data;
        assert.equal(hook.status, 'active');
      });

      it('treats a redirect as a failure and does not follow it', async () => {
        const { p, id } = await setup((n) =>
          n === 1 ? { status: 302, headers: { location: '/elsewhere' } } : {},
        );
        const d = await finished(id);
        assert.equal(d.status, 'succeeded');
        assert.equal(d.attempts[0].status_code, 302);
        assert.match(d.attempts[0].error, /redirect/);
        assert.equal(requestsTo(rx, '/elsewhere').length, 0);
        assert.equal(requestsTo(rx, p).length, 2);
      });

      it('disables the webhook at once on 410 Gone', async () => {
        const { p, id } = await setup(() => ({ status: 410 }));
        const d = await finished(id);
        assert.equal(d.status, 'failed');
        assert.equal(d.attempts.length, 1);
        assert.equal(d.attempts[0].status_code, 410);
        const hook = (await h.request('GET', `/v1/webhooks/${id}`, { key: w.acc.adminKey })).body.data;
        assert.equal(hook.status, 'disabled');
        assert.match(hook.disabled_reason, /410/);
        assert.equal(requestsTo(rx, p).length, 1);
      });

      it('does not disable a webhook moved to a new URL for a 410 its old receiver gave meanwhile', async () => {
        let release!: () => void;
        const held = new Promise<void>((r) => {
          release = r;
        });
        const { p, id } = await setup(async () => {
          await held;
          return { status: 410 };
        });
        await waitUntil('the attempt to reach the old receiver', () => requestsTo(rx, p).length === 1);
        const moved = uniquePath('moved');
        answer(moved, () => ({ status: 204 }));
        const patched = await h.request('PATCH', `/v1/webhooks/${id}`, {
          key: w.acc.adminKey,
          body: { url: rx.url + moved },
        });
        assert.equal(patched.status, 200, patched.raw);
        release();
        const d = await finished(id);
        assert.equal(d.status, 'failed');
        assert.equal(d.attempts[0].status_code, 410);
        const hook = (await h.request('GET', `/v1/webhooks/${id}`, { key: w.acc.adminKey })).body.data;
        assert.equal(hook.status, 'active', 'the 410 came from a URL the webhook no longer has');
        assert.equal(hook.disabled_reason, null);
        // The next event goes to the new URL.
        await h.request('POST', '/v1/data', { key: w.acc.adminKey, body: { title: 'after', type: 'note' } });
        await waitUntil('the next event at the new URL', () => requestsTo(rx, moved).length === 1);
      });

      it("waits as long as the receiver's Retry-After asks when the schedule allows it", async () => {
        const { id } = await setup((n) => (n === 1 ? { status: 503, headers: { 'retry-after': '1' } } : {}));
        const d = await finished(id);
        assert.equal(d.status, 'succeeded');
        assert.equal(d.attempts.length, 2);
        assert.ok(gap(d.attempts[0], d.attempts[1]) >= 1000, 'Retry-After: 1 outweighs the 0.2 s step');
      });

      it("caps Retry-After at the schedule's longest step and still makes every retry", async () => {
        const { p, id } = await setup(() => ({ status: 429, headers: { 'retry-after': '3600' } }));
        const d = await finished(id);
        assert.equal(d.status, 'failed');
        assert.equal(d.attempts.length, 6, 'the first attempt plus 5 retries, as without Retry-After');
        assert.equal(requestsTo(rx, p).length, 6);
        const longest = Math.max(...SCHEDULE) * 1000;
        for (let i = 1; i < 6; i++) {
          const waited = gap(d.attempts[i - 1], d.attempts[i]);
          assert.ok(waited >= longest, `retry ${i} waited the longest step (${waited} ms)`);
          assert.ok(waited < 3600_000, `retry ${i} did not wait the asked hour`);
        }
        const hook = (await h.request('GET', `/v1/webhooks/${id}`, { key: w.acc.adminKey })).body.data;
        assert.equal(hook.status, 'disabled');
        assert.match(hook.disabled_reason, /failed after 6 attempts/);
      });

      it('fails a 2xx whose body, short or long, has not ended by the deadline, and retries it', async () => {
        // 300,000 bytes: half of it arrives at once, more than any drain limit, the rest too late.
        for (const size of [100, 300_000]) {
          const { p, id } = await setup((n) =>
            n === 1
              ? { status: 200, body: 'x'.repeat(size), bodyDelayMs: TIMEOUT_MS + 1500 }
              : { status: 200, body: 'y'.repeat(size) },
          );
          const d = await finished(id);
          assert.equal(d.status, 'succeeded', `${size}`);
          assert.equal(d.attempts.length, 2, `${size}`);
          assert.equal(d.attempts[0].status_code, 200);
          assert.match(d.attempts[0].error, /timed out after 3000 ms before the answer ended/);
          assert.ok(d.attempts[0].duration_ms >= TIMEOUT_MS - 50);
          assert.equal(d.attempts[1].error, null, 'a long body that ends in time is a success');
          assert.equal(requestsTo(rx, p).length, 2);
        }
      });

      it('fails a 2xx whose body breaks off before its end, and retries it', async () => {
        const { id } = await setup((n) =>
          n === 1
            ? { status: 200, headers: { 'content-length': '1000' }, body: 'x'.repeat(1000), breakBody: true }
            : {},
        );
        const d = await finished(id);
        assert.equal(d.status, 'succeeded');
        assert.equal(d.attempts.length, 2);
        assert.equal(d.attempts[0].status_code, 200);
        assert.match(d.attempts[0].error, /^the answer broke off: /);
        assert.equal(d.attempts[1].error, null);
      });
    });
  },
  {
    env: {
      ADS_WEBHOOK_ALLOW_PRIVATE: 'true',
      ADS_WEBHOOK_CA_FILE: receiver.caFile,
      ADS_WEBHOOK_RETRY_SCHEDULE: SCHEDULE.join(','),
      ADS_WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
    },
  },
);

describeEachDatabase(
  'a webhook disabled while one of its attempts is in flight',
  (h) => {
    const w = withDeliveryWorker(h);

    it('fails that delivery too, instead of scheduling its retry an hour away', async () => {
      const p = uniquePath('inflight');
      let id = '';
      const status = async () =>
        (await h.request('GET', `/v1/webhooks/${id}`, { key: w.acc.adminKey })).body.data.status;
      // The first request (object A) fails only once the next one (object B), a 410, has disabled the
      // webhook: it is in flight throughout, however slowly a busy machine gets to B.
      answer(p, async (n) => {
        if (n !== 1) return { status: 410 };
        await waitUntil('B disables the webhook', async () => (await status()) === 'disabled');
        return { status: 500 };
      });
      id = await registerWebhook(h, w.acc, { url: rx.url + p, events: ['data.created'] });
      await h.request('POST', '/v1/data', { key: w.acc.adminKey, body: { title: 'A', type: 'note' } });
      await waitUntil('A in flight', () => requestsTo(rx, p).length === 1);
      await h.request('POST', '/v1/data', { key: w.acc.adminKey, body: { title: 'B', type: 'note' } });
      const log = await waitUntil('both attempts recorded', async () => {
        const all = await deliveriesOf(h, w.acc.adminKey, id);
        return all.length === 2 && all.every((d) => d.attempts.length === 1) && all;
      });
      assert.deepEqual(log.map((d) => [d.attempts[0].status_code, d.status, d.next_attempt_at]).sort(), [
        [410, 'failed', null],
        [500, 'failed', null],
      ]);
      assert.equal(await status(), 'disabled');
    });
  },
  {
    env: {
      ADS_WEBHOOK_ALLOW_PRIVATE: 'true',
      ADS_WEBHOOK_CA_FILE: receiver.caFile,
      ADS_WEBHOOK_RETRY_SCHEDULE: '3600',
    },
  },
);
