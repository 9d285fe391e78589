import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { Agent, request } from 'undici';
import { type ServeProcess, startServe } from '../helpers/process.ts';
import { partOf } from '../helpers/smtp-server.ts';
import { waitUntil } from '../webhooks/fixtures.ts';

/**
 * Runs `ads serve` at trace level through every flow that carries a key, token or webhook secret,
 * in every form a client may send it (header, query string, body, path, malformed), then searches
 * everything the process wrote to stderr: no secret may appear.
 */
describe('logs hold no key, token or secret (ads serve at trace level)', () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ads-logs-'));
  let server: ServeProcess | undefined;
  let agent: Agent | undefined;
  after(async () => {
    if (server && server.child.exitCode === null && server.child.signalCode === null) await server.stop();
    await agent?.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('0 hits for every secret issued or sent, in the whole log stream', { timeout: 120_000 }, async (t) => {
    server = await startServe({
      ADS_DATA_DIR: dataDir,
      ADS_LOG_LEVEL: 'trace',
      ADS_WEBHOOK_ALLOW_PRIVATE: 'true',
    });
    agent = new Agent({
      connect: { ca: fs.readFileSync(path.join(dataDir, 'tls/cert.pem')), servername: 'localhost' },
    });
    const s = server;
    const secrets: string[] = [];
    const call = async (
      method: string,
      p: string,
      opts: { key?: string; body?: string; headers?: Record<string, string> } = {},
    ) => {
      const res = await request(`${s.url}${p}`, {
        method: method as 'GET',
        dispatcher: agent,
        headers: {
          ...(opts.key ? { authorization: `Bearer ${opts.key}` } : {}),
          ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}),
          ...opts.headers,
        },
        body: opts.body,
      });
      const text = await res.body.text();
      // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON bodies.
      return { status: res.statusCode, body: (text.startsWith('{') ? JSON.parse(text) : text) as any };
    };
    const json = (v: unknown) => JSON.stringify(v);

    const admin = /Admin API key \(shown once, keep it safe\): (ads_\S+)/.exec(s.stdout())?.[1];
    assert.ok(admin);
    secrets.push(admin);

    // API key creation, then the key used as a bearer token.
    const created = await call('POST', '/v1/api-keys', {
      key: admin,
      body: json({ name: 'logs', scopes: ['read', 'write'] }),
    });
    assert.equal(created.status, 201);
    const key: string = created.body.data.key;
    secrets.push(key);
    assert.equal((await call('GET', '/v1/data', { key })).status, 200);
    // The key in places the API does not read it from: query string, other headers, a path, a body.
    await call('GET', `/v1/data?api_key=${key}&access_token=${key}`);
    await call('GET', `/v1/data?api_key=${key}`, { key });
    await call('GET', `/v1/no-such-route?api_key=${key}&token=${key}`);
    await call('GET', `/v1/data/${key}`, { key });
    await call('GET', `/v1/no-such-route/${key}/x`, { key });
    await call('GET', `/v1/no-such-route?${key}`);
    await call('GET', '/v1/data', {
      headers: { authorization: key, 'x-api-key': key, cookie: `key=${key}` },
    });
    await call('GET', '/v1/data', {
      headers: { authorization: `Basic ${Buffer.from(`${key}:`).toString('base64')}` },
    });
    await call('POST', '/v1/data', { key, body: `{"title": "${key}", broken` });
    await call('POST', '/v1/data', { key, body: json({ title: 'x', type: 'note', unknown: key }) });
    await call('GET', `/v1/search?q=${key}`, { key });
    // Garbage and revoked keys.
    const garbage = `ads_${'Zq9'.repeat(15)}`;
    secrets.push(garbage);
    assert.equal((await call('GET', '/v1/data', { key: garbage })).status, 401);
    await call('GET', '/v1/data', { key: `${garbage}-not-even-the-format` });
    await call('DELETE', `/v1/api-keys/${created.body.data.id}`, { key: admin });
    assert.equal((await call('GET', '/v1/data', { key })).status, 401);

    // Webhook secret at creation and rotation, and a signed test ping.
    const hookSecret = 'whsec_logs_0123456789abcdefghijklmnop';
    const rotated = 'whsec_logs_rotated_zyxwvutsrqponmlkjihg';
    secrets.push(hookSecret, rotated);
    const hook = await call('POST', '/v1/webhooks', {
      key: admin,
      body: json({ url: 'https://127.0.0.1:9/hook', events: ['*'], secret: hookSecret }),
    });
    assert.equal(hook.status, 201, json(hook.body));
    await call('POST', '/v1/webhooks', {
      key: admin,
      body: json({ url: 'ftp://x', events: ['*'], secret: hookSecret }),
    });
    const patched = await call('PATCH', `/v1/webhooks/${hook.body.data.id}`, {
      key: admin,
      body: json({ secret: rotated }),
    });
    assert.equal(patched.status, 200, json(patched.body));
    await call('POST', `/v1/webhooks/${hook.body.data.id}/test`, { key: admin });

    // Invitation: the token from the mail (the outbox, no SMTP set), in the link's URL and accepted.
    const invited = await call('POST', '/v1/users', {
      key: admin,
      body: json({ email: 'logs@example.com', role: 'member' }),
    });
    assert.equal(invited.status, 201, json(invited.body));
    const outbox = path.join(dataDir, 'outbox');
    const token = await waitUntil('the invitation mail', () => {
      for (const f of fs.existsSync(outbox) ? fs.readdirSync(outbox) : []) {
        const m = /adsinv_[A-Za-z0-9_-]{43}/.exec(
          partOf(fs.readFileSync(path.join(outbox, f), 'utf8'), 'text/plain'),
        );
        if (m) return m[0];
      }
      return undefined;
    });
    secrets.push(token);
    await call('GET', `/v1/invitations/accept?token=${token}`); // the mail's link, opened as is
    await call('POST', '/v1/invitations/accept', { body: `{"token":"${token}"` }); // malformed JSON
    await call('POST', '/v1/invitations/accept', { body: json({ token: `${token}x` }) });
    const accepted = await call('POST', '/v1/invitations/accept', { body: json({ token }) });
    assert.equal(accepted.status, 200, json(accepted.body));
    secrets.push(accepted.body.data.api_key.key);
    await call('POST', '/v1/invitations/accept', { body: json({ token }) }); // already used
    await call('GET', '/v1/account', { key: accepted.body.data.api_key.key });

    assert.equal(await s.stop('SIGTERM'), 0);
    const logs = s.stderr();
    const lines = logs.split('\n').filter((l) => l.startsWith('{'));
    assert.ok(lines.length >= 30, `the log stream is not empty (${lines.length} lines)`);
    // Each secret, and its distinctive body without the prefix (e.g. a partly masked key).
    const needles = secrets.flatMap((x) => [x, x.replace(/^(ads|adsinv|whsec)_/, '').slice(0, 24)]);
    const hits = needles.filter((n) => logs.includes(n));
    const where = lines.filter((l) => hits.some((n) => l.includes(n))).map((l) => l.slice(0, 300));
    assert.deepEqual(hits, [], `secrets found in the log stream:\n${where.join('\n')}`);
    t.diagnostic(`${secrets.length} secrets, ${lines.length} log lines at trace level: 0 hits`);
  });
});
