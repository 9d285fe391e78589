import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { postgresSkipReason } from '../helpers/databases.ts';
import { createHarness } from '../helpers/harness.ts';
import { registerWebhook, requestsTo, startReceiverWithCa, uniquePath, waitUntil } from './fixtures.ts';
import { startWorkerProcess, type WorkerProcess } from './worker-process.ts';

const EVENTS = 200;

describe('two `ads worker` processes on one PostgreSQL', { skip: postgresSkipReason() }, () => {
  const h = createHarness('postgres', { ADS_WEBHOOK_ALLOW_PRIVATE: 'true' });
  let receiver: Awaited<ReturnType<typeof startReceiverWithCa>>;
  const workers: WorkerProcess[] = [];
  before(async () => {
    await h.setup();
    receiver = await startReceiverWithCa();
    // A little latency per request keeps both workers busy at the same time.
    receiver.rx.setHandler(() => ({ status: 200, delayMs: 15 }));
  });
  after(async () => {
    await Promise.all(workers.map((w) => w.stop('SIGKILL')));
    await receiver?.close();
    await h.teardown();
  });

  it('send every delivery exactly once', async (t) => {
    const acc = await h.account('enterprise');
    const p = uniquePath('shared');
    await registerWebhook(h, acc, { url: receiver.rx.url + p, events: ['*'], secret: 'shared-secret' });
    if (h.config.database.dialect !== 'postgres') throw new Error('postgres only');
    const env = {
      ADS_DATABASE_URL: h.config.database.url,
      ADS_DATA_DIR: h.config.dataDir, // the same secret key the webhook's secret was sealed with
      ADS_WEBHOOK_ALLOW_PRIVATE: 'true',
      ADS_WEBHOOK_CA_FILE: receiver.caFile,
      ADS_WEBHOOK_RETRY_SCHEDULE: '0.5,1',
      ADS_LOG_LEVEL: 'debug',
    };
    workers.push(...(await Promise.all([startWorkerProcess(env), startWorkerProcess(env)])));

    for (let i = 0; i < EVENTS; i += 20) {
      const batch = Array.from({ length: Math.min(20, EVENTS - i) }, (_, j) =>
        h.request('POST', '/v1/data', { key: acc.adminKey, body: { title: `e${i + j}`, type: 'note' } }),
      );
      for (const res of await Promise.all(batch)) assert.equal(res.status, 201);
    }
    const expected = await h.database.db
      .selectFrom('webhook_deliveries')
      .select('id')
      .where('account_id', '=', acc.id)
      .execute();
    assert.equal(expected.length, EVENTS);
    await waitUntil(
      'every delivery to succeed',
      async () => {
        const open = await h.database.db
          .selectFrom('webhook_deliveries')
          .select('id')
          .where('account_id', '=', acc.id)
          .where('status', '!=', 'succeeded')
          .execute();
        return open.length === 0;
      },
      60_000,
    );
    // Once all have succeeded nothing is claimed any more; graceful stops finish anything in flight.
    const codes = await Promise.all(workers.map((w) => w.stop('SIGTERM')));
    assert.deepEqual(codes, [0, 0]);

    const seen = new Map<string, number>();
    for (const r of requestsTo(receiver.rx, p)) {
      const id = String(r.headers['x-service-delivery']);
      seen.set(id, (seen.get(id) ?? 0) + 1);
    }
    const twice = [...seen].filter(([, n]) => n > 1);
    assert.deepEqual(twice, [], 'no delivery was sent twice');
    assert.deepEqual([...seen.keys()].sort(), expected.map((d) => d.id).sort());
    const split = workers.map((w) => w.logs().filter((l) => l.msg === 'webhook delivered').length);
    t.diagnostic(`deliveries per worker: ${split.join(' + ')}`);
    assert.equal(split[0]! + split[1]!, EVENTS);
  });
});
