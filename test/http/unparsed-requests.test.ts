import assert from 'node:assert/strict';
import net, { type AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { createLogger } from '../../src/lib/logger.ts';
import { createHarness } from '../helpers/harness.ts';

/** Sends raw bytes and reads until the server closes: the status and the X-Request-Id. */
function exchange(port: number, bytes: string): Promise<{ status: number; requestId: string; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(bytes));
    let text = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk) => {
      text += chunk;
    });
    socket.on('error', reject);
    socket.on('close', () => {
      resolve({
        status: Number(text.split(' ')[1]),
        requestId: /^x-request-id: (\S+)\r$/m.exec(text)?.[1] ?? '',
        body: text.slice(text.indexOf('\r\n\r\n') + 4),
      });
    });
  });
}

const sample = (text: string, series: string) =>
  Number(
    text
      .split('\n')
      .find((l) => l.startsWith(`${series} `))
      ?.slice(series.length + 1) ?? 0,
  );

// decisions §9 (metrics) and docs/deployment.md ("one JSON line per request"): a request Node's
// parser refuses never reaches a hook, yet its 400 carries a request id the client may quote.
describe('requests the HTTP parser refuses are logged and counted', () => {
  const lines: Array<Record<string, unknown>> = [];
  const logger = createLogger('info', {
    write: (s: string) => {
      for (const l of s.split('\n')) if (l) lines.push(JSON.parse(l));
    },
  });
  const h = createHarness('sqlite', {}, { logger });
  let port: number;
  before(async () => {
    await h.setup();
    await h.app.listen({ host: '127.0.0.1', port: 0 });
    port = (h.app.server.address() as AddressInfo).port;
  });
  after(() => h.teardown());

  const lineOf = async (requestId: string) => {
    await new Promise((resolve) => setImmediate(resolve));
    return lines.find((l) => l.request_id === requestId);
  };

  it('headers over 16 KB: one request line with the id the client got, the key masked, and a 400 counted', async () => {
    const series = 'ads_http_requests_total{method="GET",route="unmatched",status="400"}';
    const before = sample((await h.request('GET', '/metrics')).raw, series);
    const key = `ads_${'K'.repeat(43)}`;
    const res = await exchange(
      port,
      `GET /v1/nope?${key}=1 HTTP/1.1\r\nHost: x\r\nX-Pad: ${'a'.repeat(20_000)}\r\n\r\n`,
    );
    assert.equal(res.status, 400);
    assert.match(res.requestId, /^req_/);
    const line = await lineOf(res.requestId);
    assert.ok(line, `no log line names ${res.requestId}`);
    assert.equal(line.status, 400);
    assert.equal(line.method, 'GET');
    assert.equal(line.url, '/v1/nope?ads_[redacted]=[redacted]');
    assert.equal(line.msg, 'request');
    assert.ok(!JSON.stringify(lines).includes('KKKKKKKKKKKKKKKK'));
    assert.equal(sample((await h.request('GET', '/metrics')).raw, series), before + 1);
  });

  it('bytes that are not HTTP: logged and counted with no method or path', async () => {
    const series = 'ads_http_requests_total{method="-",route="unmatched",status="400"}';
    const before = sample((await h.request('GET', '/metrics')).raw, series);
    const res = await exchange(port, 'NOT HTTP AT ALL\r\n\r\n');
    assert.equal(res.status, 400);
    const line = await lineOf(res.requestId);
    assert.ok(line, `no log line names ${res.requestId}`);
    assert.deepEqual([line.method, line.url, line.status], ['-', '-', 400]);
    assert.equal(sample((await h.request('GET', '/metrics')).raw, series), before + 1);
  });

  // Node hands CONNECT to a `connect` listener and, without one, closed the connection unanswered.
  it('CONNECT (the service taken for a proxy): 405 method_not_allowed in the envelope, logged and counted', async () => {
    const series = 'ads_http_requests_total{method="CONNECT",route="unmatched",status="405"}';
    const before = sample((await h.request('GET', '/metrics')).raw, series);
    const res = await exchange(port, 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n');
    assert.equal(res.status, 405);
    const body = JSON.parse(res.body);
    assert.equal(body.error.code, 'method_not_allowed');
    assert.equal(body.error.request_id, res.requestId);
    const line = await lineOf(res.requestId);
    assert.ok(line, `no log line names ${res.requestId}`);
    assert.deepEqual([line.method, line.url, line.status], ['CONNECT', 'example.com:443', 405]);
    assert.equal(sample((await h.request('GET', '/metrics')).raw, series), before + 1);
  });
});
