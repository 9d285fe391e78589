import assert from 'node:assert/strict';
import net, { type AddressInfo } from 'node:net';
import { before, it } from 'node:test';
import { describeEachDatabase, type TestAccount } from '../helpers/harness.ts';
import { receivedUntilClose } from '../helpers/sockets.ts';

/** Sends `head` (request line and headers, without the blank line) and reads the whole answer. */
async function raw(port: number, head: string): Promise<{ status: number; headers: string; body: string }> {
  const socket = net.connect(port, '127.0.0.1');
  const received = receivedUntilClose(socket);
  socket.write(`${head}\r\nConnection: close\r\n\r\n`);
  const data = await received;
  const at = data.indexOf('\r\n\r\n');
  return {
    status: Number(data.slice(9, 12)),
    headers: data.slice(0, at).toLowerCase(),
    body: data.slice(at + 4),
  };
}

// Node answers an HTTP/1.1 request without Host, and an Expect it does not know, itself, with a
// bare 400 or 417 outside the error envelope. The service answers the first in the envelope and
// serves the second as if the header were absent.
describeEachDatabase('HTTP requests Node would answer itself', (h) => {
  let acc: TestAccount;
  let port: number;
  before(async () => {
    acc = await h.account('enterprise');
    await h.app.listen({ host: '127.0.0.1', port: 0 });
    port = (h.app.server.address() as AddressInfo).port;
  });

  it('an HTTP/1.1 request without Host: 400 invalid_request in the envelope, with a request id', async () => {
    const res = await raw(port, `GET /v1/data HTTP/1.1\r\nAuthorization: Bearer ${acc.adminKey}`);
    assert.equal(res.status, 400, res.body);
    assert.match(res.headers, /content-type: application\/json/);
    const body = JSON.parse(res.body);
    assert.equal(body.error.code, 'invalid_request');
    assert.match(body.error.message, /Host header/);
    assert.ok(res.headers.includes(`x-request-id: ${body.error.request_id.toLowerCase()}`), res.headers);
  });

  it('every operation, the health probes included, lists that 400 in the OpenAPI document', async () => {
    for (const path of ['/healthz', '/readyz', '/metrics']) {
      const res = await raw(port, `GET ${path} HTTP/1.1`);
      assert.equal(res.status, 400, `${path}: ${res.body}`);
      assert.equal(JSON.parse(res.body).error.code, 'invalid_request');
    }
    const doc = (await h.request('GET', '/v1/openapi.json')).body;
    const unlisted: string[] = [];
    for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, unknown>>)) {
      for (const [method, op] of Object.entries(item)) {
        const responses = (op as { responses?: Record<string, unknown> }).responses;
        if (responses && !responses['400']) unlisted.push(`${method.toUpperCase()} ${path}`);
      }
    }
    assert.deepEqual(unlisted, []);
  });

  it('a query string that cannot be decoded: 400 invalid_request, not its escapes read literally', async () => {
    const created = await h.request('POST', '/v1/data', {
      key: acc.adminKey,
      body: { title: 'percent probe', type: 'note', tags: ['%FF', '50%'] },
    });
    assert.equal(created.status, 201);
    for (const query of ['q=probe&filter=tag:%FF', 'q=probe&filter=tag:50%', 'q=%ED%A0%80', 'q=probe%2']) {
      const res = await raw(
        port,
        `GET /v1/search?${query} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${acc.adminKey}`,
      );
      assert.equal(res.status, 400, `${query}: ${res.body}`);
      const body = JSON.parse(res.body);
      assert.equal(body.error.code, 'invalid_request');
      assert.match(body.error.message, /query string cannot be decoded/);
    }
    // Escaped as they must be, the same tags are found.
    for (const tag of ['%25FF', '50%25']) {
      const res = await h.request('GET', `/v1/search?q=probe&filter=tag:${tag}`, { key: acc.adminKey });
      assert.equal(res.status, 200, res.raw);
      assert.equal(res.body.data.total, 1, tag);
    }
  });

  it('HTTP/1.0 needs no Host, and a request with one is served', async () => {
    for (const head of [
      `GET /v1/data HTTP/1.0\r\nAuthorization: Bearer ${acc.adminKey}`,
      `GET /v1/data HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${acc.adminKey}`,
    ]) {
      const res = await raw(port, head);
      assert.equal(res.status, 200, `${head}: ${res.body}`);
      assert.equal(typeof JSON.parse(res.body).data.total, 'number');
    }
  });

  /**
   * Sends a request with `Expect: 100-continue` and no body, then waits: what the server says
   * first (a 100, or the final answer), and, after a 100, the answer once `body` is sent.
   */
  async function expectContinue(head: string, body: string): Promise<{ first: string; final?: string }> {
    const socket = net.connect(port, '127.0.0.1');
    socket.setEncoding('utf8');
    let data = '';
    const arrived = (what: RegExp) =>
      new Promise<void>((resolve) => {
        const check = () => {
          if (what.test(data)) {
            socket.off('data', onData);
            resolve();
          }
        };
        const onData = (d: string) => {
          data += d;
          check();
        };
        socket.on('data', onData);
        check();
      });
    socket.write(`${head}\r\nHost: localhost\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n`);
    await arrived(/^HTTP\/1\.1 \d{3}[^\r\n]*\r\n(?:[^\r\n]+\r\n)*\r\n/);
    const first = data;
    if (!first.startsWith('HTTP/1.1 100')) {
      socket.destroy();
      return { first };
    }
    data = '';
    const closed = receivedUntilClose(socket);
    socket.write(body);
    return { first, final: data + (await closed) };
  }

  it('Expect: 100-continue is answered only once the key and the size let the request through', async () => {
    const body = JSON.stringify({ title: 'after continue', type: 'note' });
    const json = `Content-Type: application/json\r\nContent-Length: ${body.length}`;
    const ok = await expectContinue(
      `POST /v1/data HTTP/1.1\r\nAuthorization: Bearer ${acc.adminKey}\r\n${json}`,
      body,
    );
    assert.match(ok.first, /^HTTP\/1\.1 100 Continue/);
    assert.match(String(ok.final), /^HTTP\/1\.1 201 /, ok.final);
    // No key: the 401 is the first answer, and no body was asked for.
    const anonymous = await expectContinue(`POST /v1/data HTTP/1.1\r\n${json}`, body);
    assert.match(anonymous.first, /^HTTP\/1\.1 401 /, anonymous.first);
    // Over the body limit: 413 at once, not a 100 followed by megabytes to be refused.
    const huge = await expectContinue(
      `POST /v1/data HTTP/1.1\r\nAuthorization: Bearer ${acc.adminKey}\r\nContent-Type: application/json\r\nContent-Length: 50000000`,
      '',
    );
    assert.match(huge.first, /^HTTP\/1\.1 413 /, huge.first);
    assert.match(huge.first, /payload_too_large/);
  });

  it('a connection pipelining more than 32 requests at once is closed; a few are all answered', async () => {
    const pipelined = async (n: number) => {
      const socket = net.connect(port, '127.0.0.1');
      const received = receivedUntilClose(socket);
      const one = 'GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n';
      socket.write(
        `${one.repeat(n - 1)}GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`,
      );
      return ((await received).match(/HTTP\/1\.1 200 /g) ?? []).length;
    };
    assert.equal(await pipelined(5), 5);
    // Each request would have had its answer built and held for a client that reads none.
    assert.ok((await pipelined(200)) < 200, 'closed before answering all 200');
    assert.equal(await pipelined(3), 3, 'the server serves on');
  });

  it('a chunked request with no body is taken under any Content-Type when the operation takes none', async () => {
    const send = async (chunks: string) => {
      const socket = net.connect(port, '127.0.0.1');
      const received = receivedUntilClose(socket);
      socket.write(
        `DELETE /v1/data/dat_01JD4Z5T8N3QK9W2V7R6M1B0XC HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${acc.adminKey}\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n${chunks}`,
      );
      const data = await received;
      return { status: Number(data.slice(9, 12)), body: data.slice(data.indexOf('\r\n\r\n') + 4) };
    };
    const empty = await send('0\r\n\r\n');
    assert.equal(empty.status, 404, empty.body);
    assert.match(empty.body, /not_found/);
    const withBody = await send('1\r\nx\r\n0\r\n\r\n');
    assert.equal(withBody.status, 400, withBody.body);
    assert.match(withBody.body, /invalid_content_type/);
  });

  it('an Expect other than 100-continue is ignored: the request is served as usual', async () => {
    const res = await raw(
      port,
      `GET /v1/data HTTP/1.1\r\nHost: localhost\r\nExpect: something-else\r\nAuthorization: Bearer ${acc.adminKey}`,
    );
    assert.equal(res.status, 200, res.body);
    const unauthenticated = await raw(port, 'GET /v1/data HTTP/1.1\r\nHost: localhost\r\nExpect: x');
    assert.equal(unauthenticated.status, 401);
    assert.equal(JSON.parse(unauthenticated.body).error.code, 'unauthorized');
  });
});
