/**
 * The baseline: a bare `node:https` server, in its own process, with the real server's certificate,
 * answering each request with a fixed JSON body as large as the real answer to that kind of request.
 * Requests with a body are read to the end first. No routing, validation, auth or database: the
 * limit of this runtime on this machine for the same traffic.
 *
 *   node --import tsx bench/http/baseline-server.ts <spec.json>
 *
 * Prints `{"port":N}` on stdout once listening.
 */
import fs from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { type BaselineSpec, baselineBody, routeKind } from './baseline.ts';

const spec = JSON.parse(fs.readFileSync(process.argv[2]!, 'utf8')) as BaselineSpec;
const answers = new Map(
  Object.entries(spec.routes).map(([kind, r]) => {
    const body = r.bytes > 0 ? baselineBody(r.bytes) : undefined;
    const headers: Record<string, string | number> = { 'content-length': body?.length ?? 0 };
    if (body) headers['content-type'] = 'application/json; charset=utf-8';
    return [kind, { status: r.status, headers, body }];
  }),
);
const notFound = { status: 404, headers: { 'content-length': 0 }, body: undefined };

const server = https.createServer(
  { key: fs.readFileSync(spec.keyFile), cert: fs.readFileSync(spec.certFile), minVersion: 'TLSv1.2' },
  (req, res) => {
    const answer = answers.get(routeKind(req.method ?? 'GET', req.url ?? '/')) ?? notFound;
    const respond = () => {
      res.writeHead(answer.status, answer.headers);
      res.end(answer.body);
    };
    // Read the request to its end (a write's JSON body) before answering, as any real handler must.
    req.resume();
    req.once('end', respond);
  },
);
server.keepAliveTimeout = 72_000;
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ port: (server.address() as AddressInfo).port })}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
