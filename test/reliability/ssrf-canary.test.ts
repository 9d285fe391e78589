import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, it } from 'node:test';
import { createDeliveryWorker, type DeliveryWorker } from '../../src/events/delivery-worker.ts';
import { createGuardedDispatcher, type LookupAll } from '../../src/events/ssrf.ts';
import { newId } from '../../src/lib/ids.ts';
import { insertWebhook } from '../../src/modules/webhooks/repo.ts';
import { describeEachDatabase, type TestAccount } from '../helpers/harness.ts';
import { deliveriesOf, waitUntil } from '../webhooks/fixtures.ts';

/** A TCP listener on 127.0.0.1 and ::1 (same port) that counts every connection it accepts. */
async function startCanary(): Promise<{ port: number; connections: () => number; close(): Promise<void> }> {
  let count = 0;
  const servers: net.Server[] = [];
  const listen = (host: string, port: number) =>
    new Promise<net.Server>((resolve, reject) => {
      const s = net.createServer((socket) => {
        count++;
        socket.destroy();
      });
      s.once('error', reject);
      s.listen(port, host, () => resolve(s));
    });
  const v4 = await listen('127.0.0.1', 0);
  servers.push(v4);
  const port = (v4.address() as net.AddressInfo).port;
  servers.push(await listen('::1', port).catch(() => listen('::1', 0)));
  return {
    port,
    connections: () => count,
    close: async () => {
      await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
    },
  };
}

const canary = await startCanary();
after(() => canary.close());
const P = canary.port;
// The canary really counts: one probe connection, the baseline every assertion compares against.
await new Promise((r) => net.connect(P, '127.0.0.1').on('close', r).on('error', r));
const BASELINE = canary.connections();
assert.equal(BASELINE, 1, 'the canary saw the probe');

/** Targets refused at registration: every one points at the canary or at a private range. */
const REGISTRATION_VECTORS = [
  `https://127.0.0.1:${P}/`,
  `https://2130706433:${P}/`,
  `https://0177.0.0.1:${P}/`,
  `https://0x7f.1:${P}/`,
  `https://0x7f000001:${P}/`,
  `https://127.1:${P}/`,
  `https://127.0.0.1.:${P}/`,
  `https://0.0.0.0:${P}/`,
  `https://0:${P}/`,
  `https://[::1]:${P}/`,
  `https://[::]:${P}/`,
  `https://[::ffff:127.0.0.1]:${P}/`,
  `https://[::ffff:7f00:1]:${P}/`,
  `https://[0:0:0:0:0:ffff:7f00:0001]:${P}/`,
  `https://[64:ff9b::127.0.0.1]:${P}/`,
  `https://[2002:7f00:1::1]:${P}/`,
  'https://169.254.169.254/latest/meta-data/',
  'https://[::ffff:a9fe:a9fe]/',
  'https://10.0.0.1/',
  'https://172.16.0.1/',
  'https://172.31.255.254/',
  'https://192.168.0.1/',
  'https://100.64.0.1/',
  'https://[fc00::1]/',
  'https://[fd00::1]/',
  'https://[fe80::1]/',
  `https://localhost:${P}/`,
  `https://LocalHost.:${P}/`,
  `https://canary.localhost:${P}/`,
  `https://%31%32%37.0.0.1:${P}/`,
  `https://１２７.０.０.１:${P}/`,
  `http://example.com:${P}/`,
];

/** Names that pass registration but whose DNS answer at delivery time is the canary. */
const DNS_ANSWERS: Record<string, string[]> = {
  'rebind-v4.example.com': ['127.0.0.1'],
  'rebind-v6.example.com': ['::1'],
  'rebind-mapped.example.com': ['::ffff:127.0.0.1'],
  'rebind-mixed.example.com': ['93.184.215.14', '127.0.0.1'],
  'rebind-zero.example.com': ['0.0.0.0'],
  localhost: ['127.0.0.1', '::1'],
};

describeEachDatabase(
  'SSRF canary: no vector reaches a loopback listener',
  (h) => {
    let acc: TestAccount;
    before(async () => {
      acc = await h.account('enterprise');
    });

    it(`refuses ${REGISTRATION_VECTORS.length} private or loopback targets at registration with a clear 400`, async () => {
      const accepted: string[] = [];
      for (const url of REGISTRATION_VECTORS) {
        const res = await h.request('POST', '/v1/webhooks', {
          key: acc.adminKey,
          body: { url, events: ['*'] },
        });
        if (res.status !== 400 || res.body.error.code !== 'invalid_request')
          accepted.push(`${url} -> ${res.status}`);
        const patched = await h.request('POST', '/v1/webhooks', {
          key: acc.adminKey,
          body: { url: 'https://hooks.example.com/ok', events: ['*'] },
        });
        assert.equal(patched.status, 201);
        const moved = await h.request('PATCH', `/v1/webhooks/${patched.body.data.id}`, {
          key: acc.adminKey,
          body: { url },
        });
        if (moved.status !== 400) accepted.push(`PATCH ${url} -> ${moved.status}`);
      }
      assert.deepEqual(accepted, []);
      assert.equal(canary.connections() - BASELINE, 0);
    });

    it('refuses at delivery time names that resolve to the canary (DNS rebinding) and stored literals', async () => {
      const lookups: string[] = [];
      const lookup: LookupAll = (hostname, _opts, cb) => {
        lookups.push(hostname);
        const answers = DNS_ANSWERS[hostname];
        if (!answers) return cb(Object.assign(new Error(`ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), []);
        cb(
          null,
          answers.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })),
        );
      };
      // Rows as a DNS change or an older release could have left them: written past the API checks.
      const targets = [
        ...Object.keys(DNS_ANSWERS).map((name) => `https://${name}:${P}/hook`),
        `https://127.0.0.1:${P}/`,
        `https://[::1]:${P}/`,
        `https://[::ffff:127.0.0.1]:${P}/`,
        `https://0.0.0.0:${P}/`,
        `https://localhost:${P}/`,
      ];
      const ids: string[] = [];
      const now = new Date().toISOString();
      for (const url of targets) {
        const id = newId('webhook');
        ids.push(id);
        await insertWebhook(h.database.db, {
          account_id: acc.id,
          id,
          url,
          events: JSON.stringify(['*']),
          sealed_secret: null,
          status: 'active',
          disabled_reason: null,
          created_at: now,
          updated_at: now,
        });
      }
      // The test ping goes through the production dispatcher (system resolver).
      for (const id of ids) {
        const ping = await h.request('POST', `/v1/webhooks/${id}/test`, { key: acc.adminKey });
        assert.equal(ping.status, 200);
        assert.equal(ping.body.data.success, false);
      }
      // Deliveries go through the same guard with the DNS answers above.
      const dispatcher = createGuardedDispatcher({ allowPrivate: false, timeoutMs: 2000, lookup });
      const worker: DeliveryWorker = createDeliveryWorker(h.ctx, { dispatcher, pollMs: 50 });
      try {
        await worker.ready;
        const res = await h.request('POST', '/v1/data', {
          key: acc.adminKey,
          body: { title: 'x', type: 'note' },
        });
        assert.equal(res.status, 201);
        for (const id of ids) {
          const d = await waitUntil(`the delivery to ${id} to fail`, async () => {
            const [first] = await deliveriesOf(h, acc.adminKey, id);
            return first?.status === 'failed' && first;
          });
          for (const a of d.attempts) {
            assert.equal(a.status_code, null);
            assert.match(a.error, /forbidden/);
          }
        }
      } finally {
        await worker.stop();
        await dispatcher.close();
      }
      for (const name of Object.keys(DNS_ANSWERS)) assert.ok(lookups.includes(name), `${name} was resolved`);
      assert.equal(canary.connections() - BASELINE, 0, 'connections to the canary');
    });
  },
  {
    env: {
      ADS_WEBHOOK_ALLOW_PRIVATE: 'false',
      ADS_WEBHOOK_RETRY_SCHEDULE: '0.1',
      ADS_WEBHOOK_TIMEOUT_MS: '2000',
    },
  },
);
