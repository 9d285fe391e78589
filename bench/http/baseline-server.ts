/**
 * The baseline: a bare `node:https` server, in its own process, with the real server's certificate,
 * answering each request with a fixed JSON body as large as the real answer to that kind of request.
 * Requests with a body are read to the end first. No routing, validation, auth or database: the
 * limit of this runtime on this machine for the same traffic.
 *
 * With `"framework": "fastify"` in the spec it is the framework floor instead: Fastify 5 (the
 * service's framework) with the same TLS settings, one route for every request, the JSON body
 * parsed, and the same fixed body sent with the real server's response headers. No logging, hooks,
 * auth, validation or database: what the framework alone costs on the same traffic.
 *
 *   node --import tsx bench/http/baseline-server.ts <spec.json>
 *
 * Prints `{"port":N}` on stdout once listening.
 */
import fs from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import { type BaselineSpec, baselineBody, routeKind } from './baseline.ts';

const spec = JSON.parse(fs.readFileSync(process.argv[2]!, 'utf8')) as BaselineSpec;
const tls = {
  key: fs.readFileSync(spec.keyFile),
  cert: fs.readFileSync(spec.certFile),
  minVersion: 'TLSv1.2' as const,
};

interface Answer {
  status: number;
  headers: Record<string, string | number>;
  body: Buffer | undefined;
}

const answers = new Map<string, Answer>(
  Object.entries(spec.routes).map(([kind, r]) => {
    const body = r.bytes > 0 ? baselineBody(r.bytes) : undefined;
    const headers: Record<string, string | number> =
      spec.framework === 'fastify' ? { ...r.headers } : { 'content-length': body?.length ?? 0 };
    if (body) headers['content-type'] = 'application/json; charset=utf-8';
    return [kind, { status: r.status, headers, body }];
  }),
);
const notFound: Answer = { status: 404, headers: { 'content-length': 0 }, body: undefined };
const answerFor = (method: string | undefined, url: string | undefined) =>
  answers.get(routeKind(method ?? 'GET', url ?? '/')) ?? notFound;

const ready = (port: number) => process.stdout.write(`${JSON.stringify({ port })}\n`);

if (spec.framework === 'fastify') {
  const app = Fastify({ https: tls, logger: false, bodyLimit: 10 * 2 ** 20 });
  app.route({
    method: ['GET', 'POST', 'PATCH', 'DELETE'],
    url: '/*',
    handler: (request, reply) => {
      const answer = answerFor(request.method, request.url);
      reply.code(answer.status).headers(answer.headers);
      return reply.send(answer.body ?? null);
    },
  });
  app.server.keepAliveTimeout = 72_000;
  await app.listen({ port: 0, host: '127.0.0.1' });
  ready((app.server.address() as AddressInfo).port);
  process.on('SIGTERM', () => app.close().then(() => process.exit(0)));
} else {
  const server = https.createServer(tls, (req, res) => {
    const answer = answerFor(req.method, req.url);
    const respond = () => {
      res.writeHead(answer.status, answer.headers);
      res.end(answer.body);
    };
    // Read the request to its end (a write's JSON body) before answering, as any real handler must.
    req.resume();
    req.once('end', respond);
  });
  server.keepAliveTimeout = 72_000;
  server.listen(0, '127.0.0.1', () => ready((server.address() as AddressInfo).port));
  process.on('SIGTERM', () => server.close(() => process.exit(0)));
}
