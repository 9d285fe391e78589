import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import {
  serviceSignature,
  standardWebhookHeaders,
  verifyServiceSignature,
} from '../../src/events/signing.ts';

const body =
  '{"id":"evt_1","event":"data.created","timestamp":"2025-01-01T00:00:00.000Z","account_id":"acc_1","data":{}}';
const secret = 'whk-secret-0123456789';
const nowSeconds = () => Math.floor(Date.now() / 1000);

/** How a receiver builds a stock Standard Webhooks verifier from our plain-text secret. */
const receiverFor = (s: string) => new Webhook(Buffer.from(s, 'utf8').toString('base64'));

describe('serviceSignature', () => {
  it('matches the RFC 4231 HMAC-SHA256 known answer (test case 2)', () => {
    assert.equal(
      serviceSignature('what do ya want for nothing?', 'Jefe'),
      '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843',
    );
  });

  it('signs the raw bytes: a Buffer and the same string agree, other bytes differ', () => {
    const sig = serviceSignature(body, secret);
    assert.match(sig, /^[0-9a-f]{64}$/);
    assert.equal(serviceSignature(Buffer.from(body, 'utf8'), secret), sig);
    assert.notEqual(serviceSignature(`${body} `, secret), sig);
    assert.notEqual(serviceSignature(body, `${secret}x`), sig);
  });
});

describe('standardWebhookHeaders', () => {
  it('verifies with the standardwebhooks package given base64 of the secret bytes', () => {
    const headers = standardWebhookHeaders('evt_1', nowSeconds(), body, secret);
    assert.deepEqual(receiverFor(secret).verify(body, headers), JSON.parse(body));
  });

  it('verifies with the whsec_ prefixed form and with a non-ASCII secret', () => {
    const unicodeSecret = 'clé-секрет-🔑';
    const headers = standardWebhookHeaders('evt_2', nowSeconds(), body, unicodeSecret);
    const whsec = `whsec_${Buffer.from(unicodeSecret, 'utf8').toString('base64')}`;
    assert.deepEqual(new Webhook(whsec).verify(body, headers), JSON.parse(body));
  });

  it('produces exactly what the reference implementation signs', () => {
    const ts = 1614265330;
    const headers = standardWebhookHeaders('msg_p5jXN8AQM9LWM0D4loKWxJek', ts, body, secret);
    assert.equal(headers['webhook-id'], 'msg_p5jXN8AQM9LWM0D4loKWxJek');
    assert.equal(headers['webhook-timestamp'], '1614265330');
    assert.equal(
      headers['webhook-signature'],
      receiverFor(secret).sign('msg_p5jXN8AQM9LWM0D4loKWxJek', new Date(ts * 1000), body),
    );
    assert.match(headers['webhook-signature'], /^v1,[A-Za-z0-9+/]{43}=$/);
  });

  it('is rejected by the receiver for a tampered body, another secret, another id or an old timestamp', () => {
    const ts = nowSeconds();
    const headers = standardWebhookHeaders('evt_3', ts, body, secret);
    const rejects = (fn: () => unknown) => assert.throws(fn, WebhookVerificationError);
    rejects(() => receiverFor(secret).verify(body.replace('acc_1', 'acc_2'), headers));
    rejects(() => receiverFor('another-secret').verify(body, headers));
    rejects(() => receiverFor(secret).verify(body, { ...headers, 'webhook-id': 'evt_4' }));
    const old = standardWebhookHeaders('evt_3', ts - 3600, body, secret);
    rejects(() => receiverFor(secret).verify(body, old)); // replay protection
  });

  it('refuses a timestamp that is not whole non-negative seconds', () => {
    assert.throws(() => standardWebhookHeaders('evt_5', Date.now() / 1000, body, secret), RangeError);
    assert.throws(() => standardWebhookHeaders('evt_5', -1, body, secret), RangeError);
  });
});

describe('verifyServiceSignature', () => {
  const good = serviceSignature(body, secret);

  it('accepts the right signature, in either hex case and as a Buffer body', () => {
    assert.equal(verifyServiceSignature(body, secret, good), true);
    assert.equal(verifyServiceSignature(body, secret, good.toUpperCase()), true);
    assert.equal(verifyServiceSignature(Buffer.from(body), secret, good), true);
  });

  it('rejects a tampered body and a wrong secret', () => {
    assert.equal(verifyServiceSignature(body.replace('evt_1', 'evt_2'), secret, good), false);
    assert.equal(verifyServiceSignature(body, 'wrong-secret', good), false);
  });

  it('rejects malformed headers without throwing', () => {
    const malformed: Array<string | string[] | null | undefined> = [
      undefined,
      null,
      '',
      'abc',
      `sha256=${good}`,
      good.slice(0, 62),
      `${good}00`,
      `${good.slice(0, 63)}g`,
      [good],
      '中'.repeat(64),
    ];
    for (const header of malformed) {
      assert.equal(verifyServiceSignature(body, secret, header), false, JSON.stringify(header));
    }
  });
});
