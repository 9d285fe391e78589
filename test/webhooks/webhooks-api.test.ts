import assert from 'node:assert/strict';
import dns from 'node:dns';
import os from 'node:os';
import { before, it } from 'node:test';
import { isForbiddenAddress } from '../../src/events/ssrf.ts';
import { disableWebhook } from '../../src/modules/webhooks/repo.ts';
import { describeEachDatabase, type TestAccount } from '../helpers/harness.ts';

const URL_A = 'https://hooks.example.com/a';
const SECRET = 'top-secret-signing-key-0123456789';

describeEachDatabase('webhooks API: register, read, change, delete', (h) => {
  let acc: TestAccount;
  before(async () => {
    acc = await h.account('enterprise');
  });
  const post = (body: unknown, key = acc.adminKey) => h.request('POST', '/v1/webhooks', { key, body });

  it('registers a webhook (201) and never returns or stores the secret in clear', async () => {
    const res = await post({
      url: URL_A,
      events: ['data.created', 'data.deleted', 'data.created'],
      secret: SECRET,
    });
    assert.equal(res.status, 201);
    const d = res.body.data;
    assert.match(d.id, /^wh_[0-9A-HJKMNP-TV-Z]{26}$/);
    assert.equal(d.url, URL_A);
    assert.deepEqual(d.events, ['data.created', 'data.deleted'], 'duplicates dropped, order kept');
    assert.equal(d.status, 'active');
    assert.equal(d.has_secret, true);
    assert.equal(d.disabled_reason, null);
    assert.match(d.created_at, /Z$/);
    assert.ok(!res.raw.includes(SECRET));
    assert.equal(d.secret, undefined);

    const got = await h.request('GET', `/v1/webhooks/${d.id}`, { key: acc.adminKey });
    assert.equal(got.status, 200);
    assert.deepEqual(got.body.data, d);
    const list = await h.request('GET', '/v1/webhooks', { key: acc.adminKey });
    assert.ok(!list.raw.includes(SECRET));
    const row = await h.database.db
      .selectFrom('webhooks')
      .select('sealed_secret')
      .where('id', '=', d.id)
      .executeTakeFirstOrThrow();
    assert.ok(row.sealed_secret?.startsWith('v1.'));
    assert.ok(!row.sealed_secret?.includes(SECRET));
  });

  it('accepts exactly ["*"] and refuses bad bodies with 400 invalid_request', async () => {
    assert.equal((await post({ url: URL_A, events: ['*'] })).status, 201);
    const bad: unknown[] = [
      {},
      { url: URL_A },
      { url: URL_A, events: [] },
      { url: URL_A, events: ['data.exploded'] },
      { url: URL_A, events: ['*', 'data.created'] },
      { url: URL_A, events: 'data.created' },
      { url: URL_A, events: ['data.created'], secret: '' },
      { url: URL_A, events: ['data.created'], secret: 'x'.repeat(257) },
      { url: URL_A, events: ['data.created'], colour: 'red' },
      { url: `https://example.com/${'a'.repeat(2048)}`, events: ['*'] },
      { url: 'not a url', events: ['*'] },
    ];
    for (const body of bad) {
      const res = await post(body);
      assert.equal(res.status, 400, JSON.stringify(body).slice(0, 120));
      assert.equal(res.body.error.code, 'invalid_request');
      assert.ok(Array.isArray(res.body.error.details));
    }
    // The names are an enum in the document (and the generated client's types); the answer names
    // the entry and the known names.
    const unknown = await post({ url: URL_A, events: ['data.created', 'data.exploded'] });
    assert.match(
      unknown.body.error.message,
      /events\.1 must be one of data\.created, data\.updated, data\.deleted, user\.created, user\.updated, user\.deleted, \*/,
    );
    assert.equal((await post({ url: URL_A, events: ['*'], secret: 'x'.repeat(256) })).status, 201);
  });

  it('lists webhooks newest first with pagination in data and meta', async () => {
    const other = await h.account('enterprise');
    const ids: string[] = [];
    const base = Date.now();
    for (const n of [1, 2, 3]) {
      h.clock.now = base + n; // distinct creation times: ids alone do not order within a millisecond
      const res = await post({ url: `${URL_A}/${n}`, events: ['*'] }, other.adminKey);
      ids.push(res.body.data.id);
    }
    h.clock.now = null;
    const first = await h.request('GET', '/v1/webhooks?limit=2', { key: other.adminKey });
    assert.equal(first.status, 200);
    assert.deepEqual(
      first.body.data.webhooks.map((w: { id: string }) => w.id),
      [ids[2], ids[1]],
    );
    assert.deepEqual([first.body.data.total, first.body.data.pages, first.body.data.limit], [3, 2, 2]);
    assert.deepEqual([first.body.meta.total, first.body.meta.page], [3, 1]);
    const second = await h.request('GET', '/v1/webhooks?limit=2&page=2', { key: other.adminKey });
    assert.deepEqual(
      second.body.data.webhooks.map((w: { id: string }) => w.id),
      [ids[0]],
    );
    assert.equal((await h.request('GET', '/v1/webhooks?limit=101', { key: other.adminKey })).status, 400);
  });

  it('patches url, events and secret, and re-enables a disabled webhook', async () => {
    const created = await post({ url: URL_A, events: ['data.created'], secret: SECRET });
    const id = created.body.data.id;
    const patched = await h.request('PATCH', `/v1/webhooks/${id}`, {
      key: acc.adminKey,
      body: { url: 'https://hooks.example.com/b', events: ['user.created', 'user.deleted'], secret: null },
    });
    assert.equal(patched.status, 200);
    assert.equal(patched.body.data.url, 'https://hooks.example.com/b');
    assert.deepEqual(patched.body.data.events, ['user.created', 'user.deleted']);
    assert.equal(patched.body.data.has_secret, false);
    assert.ok(patched.body.data.updated_at >= created.body.data.updated_at);

    const resigned = await h.request('PATCH', `/v1/webhooks/${id}`, {
      key: acc.adminKey,
      body: { secret: 'new-one' },
    });
    assert.equal(resigned.body.data.has_secret, true);

    await disableWebhook(h.database.db, acc.id, id, 'receiver answered 410 Gone', new Date().toISOString());
    const disabled = await h.request('GET', `/v1/webhooks/${id}`, { key: acc.adminKey });
    assert.equal(disabled.body.data.status, 'disabled');
    assert.equal(disabled.body.data.disabled_reason, 'receiver answered 410 Gone');
    const enabled = await h.request('PATCH', `/v1/webhooks/${id}`, {
      key: acc.adminKey,
      body: { status: 'active' },
    });
    assert.equal(enabled.status, 200);
    assert.equal(enabled.body.data.status, 'active');
    assert.equal(enabled.body.data.disabled_reason, null);

    for (const body of [
      { status: 'disabled' },
      { url: 'http://hooks.example.com/' },
      { events: [] },
      { x: 1 },
    ]) {
      const res = await h.request('PATCH', `/v1/webhooks/${id}`, { key: acc.adminKey, body });
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.equal(res.body.error.code, 'invalid_request');
    }
  });

  it('deletes a webhook: 204 without a body, then 404', async () => {
    const id = (await post({ url: URL_A, events: ['*'] })).body.data.id;
    const del = await h.request('DELETE', `/v1/webhooks/${id}`, { key: acc.adminKey });
    assert.equal(del.status, 204);
    assert.equal(del.raw, '');
    assert.equal((await h.request('GET', `/v1/webhooks/${id}`, { key: acc.adminKey })).status, 404);
    assert.equal((await h.request('DELETE', `/v1/webhooks/${id}`, { key: acc.adminKey })).status, 404);
    const list = await h.request('GET', '/v1/webhooks?limit=100', { key: acc.adminKey });
    assert.ok(!list.body.data.webhooks.some((w: { id: string }) => w.id === id));
  });

  it("answers another account's webhook, and malformed ids, with 404 on every route", async () => {
    const other = await h.account('enterprise');
    const theirs = (await post({ url: URL_A, events: ['*'] }, other.adminKey)).body.data.id;
    const delivery = 'whd_01JD4Z5T8N3QK9W2V7R6M1B0XC';
    const routes: Array<[string, string, unknown?]> = [
      ['GET', `/v1/webhooks/${theirs}`],
      ['PATCH', `/v1/webhooks/${theirs}`, { events: ['*'] }],
      ['DELETE', `/v1/webhooks/${theirs}`],
      ['GET', `/v1/webhooks/${theirs}/deliveries`],
      ['POST', `/v1/webhooks/${theirs}/test`],
      ['POST', `/v1/webhooks/${theirs}/deliveries/${delivery}/retry`],
      ['GET', '/v1/webhooks/wh_nope'],
      ['GET', '/v1/webhooks/dat_01JD4Z5T8N3QK9W2V7R6M1B0XC'],
      ['POST', `/v1/webhooks/${theirs}/deliveries/whd_nope/retry`],
    ];
    for (const [method, path, body] of routes) {
      const res = await h.request(method, path, { key: acc.adminKey, body });
      assert.equal(res.status, 404, `${method} ${path}`);
      assert.equal(res.body.error.code, 'not_found');
    }
    const still = await h.request('GET', `/v1/webhooks/${theirs}`, { key: other.adminKey });
    assert.equal(still.status, 200, 'untouched by the other account');
  });

  it('needs read for GETs and write for changes, test pings and retries', async () => {
    const id = (await post({ url: URL_A, events: ['*'] })).body.data.id;
    const reader = await acc.user('member', ['read']);
    const writer = await acc.user('member', ['write']);
    assert.equal((await h.request('GET', '/v1/webhooks', { key: reader.key })).status, 200);
    assert.equal((await h.request('GET', `/v1/webhooks/${id}/deliveries`, { key: reader.key })).status, 200);
    assert.equal((await h.request('GET', '/v1/webhooks', { key: writer.key })).status, 403);
    const writes: Array<[string, string, unknown?]> = [
      ['POST', '/v1/webhooks', { url: URL_A, events: ['*'] }],
      ['PATCH', `/v1/webhooks/${id}`, { events: ['*'] }],
      ['DELETE', `/v1/webhooks/${id}`],
      ['POST', `/v1/webhooks/${id}/test`],
      ['POST', `/v1/webhooks/${id}/deliveries/whd_01JD4Z5T8N3QK9W2V7R6M1B0XC/retry`],
    ];
    for (const [method, path, body] of writes) {
      const res = await h.request(method, path, { key: reader.key, body });
      assert.equal(res.status, 403, `${method} ${path}`);
      assert.equal(res.body.error.code, 'forbidden');
    }
    assert.equal((await h.request('GET', '/v1/webhooks', { key: null })).status, 401);
    const patched = await h.request('PATCH', `/v1/webhooks/${id}`, {
      key: writer.key,
      body: { events: ['*'] },
    });
    assert.equal(patched.status, 200);
  });

  it('caps an account at 100 webhooks with a clear 400', async () => {
    const full = await h.account('enterprise');
    // An address literal: registration resolves a host name (a lookup each), which is not what this counts.
    for (let i = 0; i < 100; i++) {
      const res = await post({ url: `https://93.184.215.14/${i}`, events: ['*'] }, full.adminKey);
      assert.equal(res.status, 201, `webhook ${i + 1}`);
    }
    const over = await post({ url: URL_A, events: ['*'] }, full.adminKey);
    assert.equal(over.status, 400);
    assert.equal(over.body.error.code, 'invalid_request');
    assert.match(over.body.error.message, /at most 100 webhooks/);
    const list = await h.request('GET', '/v1/webhooks', { key: full.adminKey });
    assert.equal(list.body.data.total, 100);
  });
});

describeEachDatabase('webhooks API: SSRF refusal at registration', (h) => {
  let acc: TestAccount;
  before(async () => {
    acc = await h.account('enterprise');
  });

  it('refuses non-https, user info, localhost and private or reserved address literals', async () => {
    const refused = [
      'http://hooks.example.com/',
      'ftp://hooks.example.com/',
      'https://user:pass@hooks.example.com/',
      'https://hooks.example.com:0/hook',
      'https://localhost/hook',
      'https://api.localhost/hook',
      'https://127.0.0.1/hook',
      'https://10.1.2.3/hook',
      'https://192.168.0.10:8443/hook',
      'https://169.254.169.254/latest/meta-data',
      'https://100.64.0.1/',
      'https://[::1]/hook',
      'https://[::ffff:10.0.0.1]/hook',
      'https://[fd00::1]/hook',
      'https://0x7f000001/hook',
      'https://224.0.0.1/',
    ];
    for (const url of refused) {
      const res = await h.request('POST', '/v1/webhooks', {
        key: acc.adminKey,
        body: { url, events: ['*'] },
      });
      assert.equal(res.status, 400, url);
      assert.equal(res.body.error.code, 'invalid_request');
      assert.equal(res.body.error.details[0].field, 'url');
      assert.match(res.body.error.message, /^url (must|host)/);
    }
    const okRes = await h.request('POST', '/v1/webhooks', {
      key: acc.adminKey,
      body: { url: 'https://93.184.215.14/hook', events: ['*'] },
    });
    assert.equal(okRes.status, 201, 'a public address literal is accepted');
    const patch = await h.request('PATCH', `/v1/webhooks/${okRes.body.data.id}`, {
      key: acc.adminKey,
      body: { url: 'https://127.0.0.1/x' },
    });
    assert.equal(patch.status, 400, 'PATCH applies the same rules');
  });

  it('refuses a host name that resolves to a private or loopback address, and lets one through that does not resolve', async () => {
    // This machine's own name resolves to one of its addresses (/etc/hosts or the resolver).
    const name = os.hostname().toLowerCase();
    const addresses = await dns.promises.lookup(name, { all: true });
    assert.ok(
      addresses.some((a) => isForbiddenAddress(a.address)),
      `precondition: ${name} resolves to a local address (${JSON.stringify(addresses)})`,
    );
    const res = await h.request('POST', '/v1/webhooks', {
      key: acc.adminKey,
      body: { url: `https://${name}:8443/hook`, events: ['*'] },
    });
    assert.equal(res.status, 400, res.raw);
    assert.equal(res.body.error.code, 'invalid_request');
    assert.equal(res.body.error.details[0].field, 'url');
    assert.match(res.body.error.message, /^url host resolves to a private, loopback/);
    // The address is not named (the answer would map internal names to internal addresses).
    for (const { address } of addresses) assert.ok(!res.raw.includes(address), `names ${address}`);
    // .invalid never resolves (RFC 6761): nothing to refuse now; every delivery checks it again.
    const later = await h.request('POST', '/v1/webhooks', {
      key: acc.adminKey,
      body: { url: 'https://hooks.example.invalid/hook', events: ['*'] },
    });
    assert.equal(later.status, 201, later.raw);
    const patch = await h.request('PATCH', `/v1/webhooks/${later.body.data.id}`, {
      key: acc.adminKey,
      body: { url: `https://${name}/x` },
    });
    assert.equal(patch.status, 400, 'PATCH resolves the new name too');
    assert.match(patch.body.error.message, /^url host resolves to/);
  });
});
