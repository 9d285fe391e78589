import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { serviceSignature, standardWebhookHeaders } from '../../../src/events/signing.ts';
import { type ReceiverWithCa, startReceiverWithCa } from '../../../test/webhooks/fixtures.ts';
import { createClient, verifyWebhook, WebhookVerificationError } from '../src/index.ts';
import { type Instance, startInstance } from './instance.ts';

const SECRET = 'client-verify-secret-ü-0123456789';

const refused = (fn: () => unknown, reason: WebhookVerificationError['reason']) =>
  assert.throws(fn, (e: unknown) => e instanceof WebhookVerificationError && e.reason === reason);

describe('@ads/client verifyWebhook on real deliveries', () => {
  let receiver: ReceiverWithCa;
  let instance: Instance;
  let ads: ReturnType<typeof createClient>;
  let webhookId: string;
  before(async () => {
    receiver = await startReceiverWithCa();
    instance = await startInstance({
      ADS_WEBHOOK_ALLOW_PRIVATE: 'true',
      ADS_WEBHOOK_CA_FILE: receiver.caFile,
      ADS_WEBHOOK_TIMEOUT_MS: '3000',
    });
    const { key } = instance.account('enterprise');
    ads = createClient({ baseUrl: instance.url, apiKey: key, fetch: instance.fetch });
    const hook = await ads.POST('/v1/webhooks', {
      body: { url: `${receiver.rx.url}/hooks`, events: ['data.created'], secret: SECRET },
    });
    assert.equal(hook.response.status, 201);
    webhookId = hook.data!.data.id;
  });
  after(async () => {
    await instance?.close();
    await receiver?.close();
  });

  it('accepts a test ping and a data.created delivery, and returns the typed event', async () => {
    const ping = await ads.POST('/v1/webhooks/{id}/test', { params: { path: { id: webhookId } } });
    assert.equal(ping.data?.data.status_code, 200);
    const [first] = await receiver.rx.waitFor(1, 10_000);
    const test = verifyWebhook(first!.body, first!.headers, SECRET);
    assert.equal(test.event, 'webhook.test');
    assert.equal(test.id, ping.data?.data.event_id);

    const created = await ads.POST('/v1/data', { body: { title: 'Signed', type: 'note' } });
    const requests = await receiver.rx.waitFor(2, 15_000);
    const event = verifyWebhook(Buffer.from(requests[1]!.body), requests[1]!.headers, SECRET);
    assert.equal(event.event, 'data.created');
    if (event.event === 'data.created') {
      assert.equal(event.data.id, created.data?.data.id);
      assert.equal(event.data.title, 'Signed');
    }
    assert.equal(event.id, requests[1]!.headers['webhook-id']);
  });

  it('refuses a changed body, a wrong secret and missing signature headers', async () => {
    const [delivery] = await receiver.rx.waitFor(1, 10_000);
    const { body, headers } = delivery!;
    refused(
      () => verifyWebhook(body.replace('webhook.test', 'data.deleted'), headers, SECRET),
      'bad_signature',
    );
    refused(() => verifyWebhook(body, headers, `${SECRET}x`), 'bad_signature');
    refused(
      () => verifyWebhook(body, { ...headers, 'webhook-signature': undefined }, SECRET),
      'missing_header',
    );
    refused(() => verifyWebhook(body, { ...headers, 'x-service-signature': 'zz' }, SECRET), 'bad_signature');
    const fetchHeaders = new Headers(headers as Record<string, string>);
    assert.equal(verifyWebhook(body, fetchHeaders, SECRET).event, 'webhook.test');
    // Header names are case-insensitive in a plain object too (one built by hand, say).
    const capitalised = Object.fromEntries(
      Object.entries(headers).map(([k, v]) => [k.replace(/(^|-)[a-z]/g, (c) => c.toUpperCase()), v]),
    );
    assert.ok('Webhook-Signature' in capitalised);
    assert.equal(verifyWebhook(body, capitalised, SECRET).event, 'webhook.test');
  });

  it('refuses a replay outside the tolerance window and accepts it inside a wider one', async () => {
    const [delivery] = await receiver.rx.waitFor(1, 10_000);
    const body = delivery!.body;
    const id = String(delivery!.headers['webhook-id']);
    const old = Math.floor(Date.now() / 1000) - 301;
    const replayed = {
      'x-service-signature': serviceSignature(body, SECRET),
      ...standardWebhookHeaders(id, old, body, SECRET),
    };
    refused(() => verifyWebhook(body, replayed, SECRET), 'stale_timestamp');
    assert.equal(verifyWebhook(body, replayed, SECRET, { toleranceSeconds: 600 }).id, id);
    const moved = { ...replayed, 'webhook-timestamp': String(old + 300) };
    refused(() => verifyWebhook(body, moved, SECRET, { toleranceSeconds: 600 }), 'bad_signature');
  });
});
