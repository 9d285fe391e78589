// Issue 10, point 4: oversized input over a real socket. A 20 MB body on every POST and PATCH of the
// document (with Content-Length, and chunked), limit=101, page=0, page=1e9, limit=0, a 10 KB `q`,
// 10 KB filter values, very long path ids: each is a clean 4xx in the error envelope or an empty
// page (decisions §1, §2), never a 5xx, and the process's RSS stays bounded while it happens.
import assert from 'node:assert/strict';
import type http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { after, before, it } from 'node:test';
import { assertContract } from '../helpers/contract.ts';
import { describeEachDatabase, type TestAccount } from '../helpers/harness.ts';
import { documentOf, documentOperations, type FuzzOperation, idPrefix } from '../helpers/openapi-fuzz.ts';

const MB = 1024 * 1024;
const BODY_BYTES = 20 * MB;
const RSS_BOUND = 150 * MB;

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  raw: string;
}

/** Splits a raw HTTP/1.1 response (Content-Length or chunked body) into its parts. */
function parseResponse(buf: Buffer): Answer | null {
  const head = buf.indexOf('\r\n\r\n');
  if (head < 0) return null;
  const [statusLine = '', ...lines] = buf.subarray(0, head).toString('latin1').split('\r\n');
  const headers: http.IncomingHttpHeaders = {};
  for (const line of lines) {
    const i = line.indexOf(':');
    headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
  }
  let body = buf.subarray(head + 4);
  if (headers['transfer-encoding'] === 'chunked') {
    const parts: Buffer[] = [];
    for (let at = 0; at < body.length; ) {
      const eol = body.indexOf('\r\n', at);
      const size = Number.parseInt(body.subarray(at, eol).toString(), 16);
      if (!size) break;
      parts.push(body.subarray(eol + 2, eol + 2 + size));
      at = eol + 2 + size + 2;
    }
    body = Buffer.concat(parts);
  } else if (headers['content-length'] !== undefined) {
    body = body.subarray(0, Number(headers['content-length']));
  }
  return { status: Number(statusLine.split(' ')[1]), headers, raw: body.toString() };
}

/**
 * One request over its own TCP connection. The body (`bytes` of JSON-looking text) is streamed in
 * 64 KiB chunks, never held whole. Reads the answer even when the server answers and closes before
 * the upload ends (the upload's write error is expected then, not a failure).
 */
function send(
  port: number,
  method: string,
  path: string,
  opts: { key?: string; bytes?: number; chunked?: boolean } = {},
): Promise<Answer> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    const received: Buffer[] = [];
    socket.on('data', (c: Buffer) => received.push(c));
    socket.on('error', () => {});
    socket.on('close', () => {
      // A reset while the upload is still going can drop the answer: status 0 is recorded as such.
      resolve(parseResponse(Buffer.concat(received)) ?? { status: 0, headers: {}, raw: '' });
    });
    const headers = [`${method} ${path} HTTP/1.1`, 'host: 127.0.0.1', 'connection: close'];
    if (opts.key) headers.push(`authorization: Bearer ${opts.key}`);
    if (opts.bytes !== undefined) {
      headers.push('content-type: application/json');
      headers.push(opts.chunked ? 'transfer-encoding: chunked' : `content-length: ${opts.bytes}`);
    }
    socket.write(`${headers.join('\r\n')}\r\n\r\n`);
    if (opts.bytes === undefined) return;
    const chunk = Buffer.alloc(64 * 1024, 'a');
    chunk.write('{"title":"');
    let sent = 0;
    const pump = () => {
      while (sent < opts.bytes! && !socket.destroyed && socket.writable) {
        const n = Math.min(chunk.length, opts.bytes! - sent);
        sent += n;
        const piece = n === chunk.length ? chunk : chunk.subarray(0, n);
        const framed = opts.chunked
          ? Buffer.concat([Buffer.from(`${n.toString(16)}\r\n`), piece, Buffer.from('\r\n')])
          : piece;
        // One chunk per turn of the event loop, so the answer is read as soon as it arrives.
        if (!socket.write(framed)) return void socket.once('drain', pump);
        return void setImmediate(pump);
      }
      if (opts.chunked && socket.writable) socket.write('0\r\n\r\n');
    };
    pump();
  });
}

describeEachDatabase(
  'oversized input over a socket: clean 4xx, RSS bounded',
  (h) => {
    let acc: TestAccount;
    let port: number;
    let ops: FuzzOperation[];
    const ids: Record<string, string> = {};
    let peak = 0;
    let baseline = 0;
    let overLimit: Answer | undefined;
    /** Uploads cut by a reset before the answer could be read (the server answered and closed). */
    const resets: string[] = [];
    let sampler: NodeJS.Timeout | undefined;
    const results: Array<{ what: string; status: number; problem?: string }> = [];

    /** One exchange: never a 5xx; a 4xx is the envelope with X-Request-Id; matches the document. */
    function check(what: string, method: string, path: string, res: Answer, allowed: number[]) {
      let problem: string | undefined;
      if (res.status === 0) {
        resets.push(what);
        return;
      }
      if (!allowed.includes(res.status)) problem = `status ${res.status}, expected ${allowed.join(' or ')}`;
      try {
        assertContract(h.app, { method, url: path, status: res.status, headers: res.headers, raw: res.raw });
      } catch (err) {
        problem ??= String((err as Error).message).slice(0, 400);
      }
      results.push({ what, status: res.status, problem });
    }

    before(async () => {
      acc = await h.account('enterprise');
      const key = acc.adminKey;
      const hook = await h.request('POST', '/v1/webhooks', {
        key,
        body: { url: 'https://127.0.0.1:9/x', events: ['*'] },
      });
      ids.wh_ = hook.body.data.id;
      ids.dat_ = (
        await h.request('POST', '/v1/data', { key, body: { title: 'x', type: 'note' } })
      ).body.data.id;
      ids.whd_ = (
        await h.request('GET', `/v1/webhooks/${ids.wh_}/deliveries`, { key })
      ).body.data.deliveries[0].id;
      ids.usr_ = (
        await h.request('POST', '/v1/users', { key, body: { email: 'big@example.com', role: 'member' } })
      ).body.data.id;
      ids.key_ = (await acc.user('member', ['read'])).keyId;
      ops = documentOperations(documentOf(h.app));
      await h.app.listen({ host: '127.0.0.1', port: 0 });
      port = (h.app.server.address() as AddressInfo).port;
      // Warm up the routes, then sample the resident set size while the battery runs.
      for (let i = 0; i < 20; i++) await send(port, 'GET', '/v1/data', { key });
      baseline = process.memoryUsage().rss;
      peak = baseline;
      sampler = setInterval(() => {
        peak = Math.max(peak, process.memoryUsage().rss);
      }, 10);
      sampler.unref();
    });
    after(() => clearInterval(sampler));

    const pathOf = (op: FuzzOperation, id?: string) =>
      op.template.replace(/\{(\w+)\}/g, (_, n: string) => {
        const p = op.params.find((x) => x.name === n)!;
        return id ?? ids[idPrefix(p.schema) ?? ''] ?? 'x';
      });

    it('a 20 MB body on every POST and PATCH: 413 payload_too_large, with Content-Length and chunked', async () => {
      const writes = ops.filter((o) => o.method === 'POST' || o.method === 'PATCH');
      assert.ok(writes.length >= 10);
      for (const op of writes) {
        for (const chunked of [false, true]) {
          const path = pathOf(op);
          const res = await send(port, op.method, path, { key: acc.adminKey, bytes: BODY_BYTES, chunked });
          check(
            `${op.method} ${op.template} 20 MB ${chunked ? 'chunked' : 'content-length'}`,
            op.method,
            path,
            res,
            [413],
          );
        }
      }
      // Several at once.
      const op = writes.find((o) => o.template === '/v1/data')!;
      const many = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          send(port, 'POST', op.template, { key: acc.adminKey, bytes: BODY_BYTES, chunked: i % 2 === 0 }),
        ),
      );
      for (const res of many) check('6 concurrent 20 MB POST /v1/data', 'POST', op.template, res, [413]);
    });

    it('paging out of range on every list: limit=101, limit=0, page=0, page=1e9 are 400; a far page is empty', async () => {
      const lists = ops.filter((o) => o.method === 'GET' && o.params.some((p) => p.name === 'limit'));
      assert.ok(lists.length >= 5);
      for (const op of lists) {
        const base = `${pathOf(op)}?${op.template === '/v1/search' ? 'q=x&' : ''}`;
        for (const bad of [
          'limit=101',
          'limit=0',
          'page=0',
          'page=1e9',
          'page=-1',
          'page=9007199254740992',
          'limit=1.5',
          `page=${'9'.repeat(400)}`,
        ]) {
          const res = await send(port, 'GET', base + bad, { key: acc.adminKey });
          check(`GET ${op.template}?${bad.slice(0, 20)}`, 'GET', base + bad, res, [400]);
          if (res.status === 400) assert.equal(JSON.parse(res.raw).error.code, 'invalid_request');
        }
        for (const page of ['1000000000', '1000000001', String(Number.MAX_SAFE_INTEGER)]) {
          const far = await send(port, 'GET', `${base}page=${page}&limit=100`, { key: acc.adminKey });
          check(`GET ${op.template}?page=${page}`, 'GET', `${base}page=${page}`, far, [200]);
          if (far.status === 200) {
            const data = JSON.parse(far.raw).data;
            const items = Object.values(data).find(Array.isArray) as unknown[];
            assert.deepEqual(items, [], `${op.template}: a page past the end is empty`);
          }
        }
      }
    });

    it('a 10 KB q, 10 KB filter, from and to values: 400 in the envelope', async () => {
      const big = 'w'.repeat(10 * 1024);
      const words = Array.from({ length: 2000 }, (_, i) => `w${i}`)
        .join(' ')
        .slice(0, 10 * 1024);
      for (const query of [
        `q=${big}`,
        `q=${encodeURIComponent(words)}`,
        `q=${'%F0%9F%98%80'.repeat(850)}`,
        `q=x&filter=tag:${big}`,
        `q=x&filter=metadata.${big}:v`,
        `q=x&${Array.from({ length: 21 }, () => 'filter=tag:a').join('&')}`,
        `q=x&from=${big}`,
        `q=x&to=2026-01-01${big}`,
      ]) {
        const path = `/v1/search?${query}`;
        const res = await send(port, 'GET', path, { key: acc.adminKey });
        check(`GET /v1/search ${query.slice(0, 30)}… (${path.length} chars)`, 'GET', path, res, [400]);
      }
      // Past Node's 16 KiB header limit the HTTP parser answers before the app: a 4xx, not a crash.
      overLimit = await send(port, 'GET', `/v1/search?q=${'w'.repeat(40 * 1024)}`, { key: acc.adminKey });
      check('GET /v1/search with a 40 KB URL', 'GET', '/v1/search', overLimit, [400]);
    });

    it('very long path ids on every operation that takes one: answered as any unknown id, in the envelope', async () => {
      const withIds = ops.filter((o) => o.params.some((p) => p.in === 'path'));
      for (const op of withIds) {
        const request = (path: string) =>
          send(port, op.method, path, { key: acc.adminKey, bytes: op.body ? 2 : undefined });
        // A short unknown id: 404, or 400 where the body `{}` is refused before the lookup (a PATCH).
        const short = await request(pathOf(op, 'dat_AAAA'));
        assert.ok([400, 404].includes(short.status), `${op.method} ${op.template}: ${short.status}`);
        for (const length of [201, 1024, 10 * 1024]) {
          const path = pathOf(op, `dat_${'A'.repeat(length)}`);
          const res = await request(path);
          // Two 10 KB ids make a URL past Node's 16 KB header limit: refused before routing, 400.
          const expected = path.length > 16_000 ? [400] : [short.status];
          check(`${op.method} ${op.template} with a ${length}-char id`, op.method, path, res, expected);
        }
      }
    });

    it('reports the figures; no 5xx, no answer outside the envelope, RSS growth under 150 MB', async (t) => {
      // The server still serves normal requests.
      const ok = await send(port, 'GET', '/v1/data', { key: acc.adminKey });
      assert.equal(ok.status, 200);
      const growth = peak - baseline;
      const fiveXX = results.filter((r) => r.status >= 500).length;
      const bad = results.filter((r) => r.problem);
      const statuses: Record<number, number> = {};
      for (const r of results) statuses[r.status] = (statuses[r.status] ?? 0) + 1;
      t.diagnostic(
        `${results.length + resets.length} oversized requests; 5xx ${fiveXX}; unclean answers ${bad.length}; ` +
          `connections reset before the answer was read ${resets.length}; ` +
          `statuses ${JSON.stringify(statuses)}; peak RSS growth ${(growth / MB).toFixed(1)} MB; ` +
          `a 40 KB URL: ${overLimit?.status} ${overLimit?.raw.slice(0, 100)}`,
      );
      assert.equal(fiveXX, 0);
      assert.deepEqual(resets, [], 'every refused upload reads its 413 (lingering close), no reset');
      assert.ok(growth < RSS_BOUND, `RSS grew ${(growth / MB).toFixed(1)} MB`);
      assert.deepEqual(
        bad.map((r) => `${r.what}: ${r.problem}`),
        [],
      );
    });
  },
  { env: { ADS_WEBHOOK_ALLOW_PRIVATE: 'true' } },
);
