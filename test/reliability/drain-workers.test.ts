import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import tls from 'node:tls';
import pino from 'pino';
import { startServer } from '../../src/server.ts';
import { testConfig } from '../helpers/harness.ts';
import { startReceiverWithCa, waitUntil } from '../webhooks/fixtures.ts';

// decisions §9: SIGTERM stops accepting, finishes in-flight requests and delivery attempts, then
// exits. The workers must take no new work once closing starts: a slow request can hold the HTTP
// drain open for a long time, and a worker still claiming meanwhile began attempts that the drain
// timeout then cut off, which another process sent again (docs/reliability.md promises 0 sent twice).
describe('closing the server: the workers take no new work while requests drain', () => {
  const dirs: string[] = [];
  let receiver: Awaited<ReturnType<typeof startReceiverWithCa>> | undefined;
  after(async () => {
    await receiver?.close();
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  });

  it('an event committed during the drain waits, durable, for the next start, and is sent once', {
    timeout: 60_000,
  }, async () => {
    receiver = await startReceiverWithCa();
    const rx = receiver.rx;
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ads-drain-workers-'));
    dirs.push(dataDir);
    const config = {
      ...testConfig(dataDir, {
        ADS_PORT: '0',
        ADS_WEBHOOK_ALLOW_PRIVATE: 'true',
        ADS_WEBHOOK_CA_FILE: receiver.caFile,
      }),
    };
    const logger = pino({ level: 'silent' });
    const first = await startServer(config, logger);
    const key = first.bootstrap?.api_key.key;
    assert.ok(key);
    const call = (method: 'POST', url: string, body: unknown) =>
      first.app.inject({ method, url, headers: { authorization: `Bearer ${key}` }, payload: body as object });
    const hook = await call('POST', '/v1/webhooks', { url: `${rx.url}/drain`, events: ['data.created'] });
    assert.equal(hook.statusCode, 201, hook.body);
    const before = await call('POST', '/v1/data', { title: 'before closing', type: 'note' });
    assert.equal(before.statusCode, 201);
    await waitUntil('the first event delivered', () => rx.requests.length === 1);

    // A request whose body is still arriving holds the drain open.
    const { port } = new URL(first.url);
    const socket = tls.connect({ host: '127.0.0.1', port: Number(port), rejectUnauthorized: false });
    await new Promise<void>((resolve) => socket.once('secureConnect', () => resolve()));
    const body = JSON.stringify({ title: 'slow body', type: 'note' });
    socket.write(
      `POST /v1/data HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${key}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 5)}`,
    );
    let answer = '';
    socket.on('data', (d) => {
      answer += d;
    });
    await sleep(100); // the request is read and waits for the rest of its body

    let closed = false;
    const closing = first.close().then(() => {
      closed = true;
    });
    // A request already in flight commits an event while the drain waits for the slow one.
    const during = await call('POST', '/v1/data', { title: 'during the drain', type: 'note' });
    assert.equal(during.statusCode, 201);
    // Longer than the worker's poll (1 s) and its wake-up on commit: a running worker sends it.
    await sleep(1500);
    assert.equal(closed, false, 'the slow request still holds the drain');
    assert.equal(rx.requests.length, 1, 'no attempt begun after closing started');

    socket.write(body.slice(5));
    await closing;
    socket.destroy();
    assert.match(answer, /^HTTP\/1\.1 201 /, 'the slow request was answered');

    // The next start sends what waited, each event once.
    const second = await startServer(config, logger);
    try {
      await waitUntil('the waiting events delivered', () => rx.requests.length === 3);
      await sleep(300);
      const titles = rx.requests.map((r) => JSON.parse(r.body).data.title).sort();
      assert.deepEqual(titles, ['before closing', 'during the drain', 'slow body']);
    } finally {
      await second.close();
    }
  });
});
