import { type IncomingMessage, METHODS } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { newId } from '../lib/ids.ts';
import { AppError, type ErrorCode } from './errors.ts';
import { SECURITY_HEADERS } from './https-guard.ts';
import { toDetails } from './validation.ts';

/** Renders any error as the envelope of decisions §2; a 5xx never shows internals. */
export function sendError(request: FastifyRequest, reply: FastifyReply, err: AppError) {
  if (err.headers) reply.headers(err.headers);
  const error: Record<string, unknown> = { code: err.code, message: err.message, request_id: request.id };
  if (err.details?.length) error.details = err.details;
  return reply.code(err.status).type('application/json; charset=utf-8').send({ error });
}

const FASTIFY_CODES: Record<string, [ErrorCode, string]> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: [
    'invalid_content_type',
    'Request bodies must be JSON: Content-Type: application/json.',
  ],
  FST_ERR_CTP_EMPTY_JSON_BODY: [
    'invalid_json',
    'The request body is empty but Content-Type is application/json.',
  ],
  FST_ERR_CTP_INVALID_JSON_BODY: ['invalid_json', 'The request body is not valid JSON.'],
  FST_ERR_CTP_BODY_TOO_LARGE: ['payload_too_large', 'The request body is larger than the configured limit.'],
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: ['invalid_request', 'Content-Length does not match the body.'],
};

/** Maps a thrown error (ours, Fastify's or unexpected) to an AppError. */
export function toAppError(err: FastifyError | AppError | Error, request?: FastifyRequest): AppError | null {
  if (err instanceof AppError) return err;
  const fe = err as FastifyError & { validationContext?: string };
  if (fe.validation) {
    // A malformed id in a path is answered like a missing resource (decisions §1).
    if (fe.validationContext === 'params') return new AppError('not_found', 'No such resource.');
    const part = fe.validationContext === 'querystring' ? 'query' : (fe.validationContext ?? 'body');
    let details = toDetails(fe.validation as never, part);
    // A parameter given twice (`sort=title&sort=date`) arrives as a list, which the schema's
    // message ("must be one of date, title") would not explain.
    const query = part === 'query' ? (request?.query as Record<string, unknown> | undefined) : undefined;
    if (query) {
      const twice = new Set(details.filter((d) => Array.isArray(query[d.field])).map((d) => d.field));
      details = [
        ...[...twice].map((field) => ({ field, message: 'is given more than once' })),
        ...details.filter((d) => !twice.has(d.field)),
      ];
    }
    const first = details[0];
    const message = first
      ? `Invalid ${part}: ${first.field} ${first.message}${details.length > 1 ? ` (and ${details.length - 1} more)` : ''}.`
      : `Invalid ${part}.`;
    return new AppError('invalid_request', message, { details });
  }
  const mapped = fe.code ? FASTIFY_CODES[fe.code] : undefined;
  if (mapped) return new AppError(mapped[0], mapped[1]);
  // secure-json-parse rejects __proto__ / constructor.prototype keys with a SyntaxError.
  if (err instanceof SyntaxError || (fe.statusCode === 400 && /prototype|JSON/i.test(fe.message))) {
    return new AppError('invalid_json', 'The request body is not valid JSON.');
  }
  if (fe.statusCode && fe.statusCode >= 400 && fe.statusCode < 500) {
    return new AppError('invalid_request', 'The request is malformed.');
  }
  return null;
}

/** How long the rest of a refused oversized body may take to arrive (see installErrorHandling). */
const LINGER_MS = 10_000;

interface RouteShape {
  method: string;
  pattern: RegExp;
}

/**
 * Installs the error handler and the 404/405 handler for unknown routes, and returns that handler
 * so that an encapsulated context (the `/v1` API) installs it too: its own hooks (authentication,
 * rate limits) then run for its unknown paths as well.
 */
export function installErrorHandling(app: FastifyInstance) {
  const routes: RouteShape[] = [];
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const pattern = new RegExp(
      `^${route.url.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/:[A-Za-z_]+/g, '[^/]+')}$`,
    );
    for (const method of methods) routes.push({ method, pattern });
  });

  // A body over the limit is refused before it has all arrived, and the connection then closes.
  // Closing a socket with unread data sends a reset, which can destroy the 413 in the client's
  // buffer before it is read: close lingering instead (as nginx does), sending our FIN, reading and
  // dropping what still arrives, and destroying the socket once the client ends or LINGER_MS passed.
  app.addHook('onSend', (request, reply, payload, done) => {
    if (reply.statusCode !== 413 || request.raw.complete) return done(null, payload);
    const socket = request.raw.socket as Socket;
    socket.destroySoon = () => {
      socket.end();
      socket.resume();
      const timer = setTimeout(() => socket.destroy(), LINGER_MS);
      timer.unref();
      socket.once('end', () => socket.destroy());
      socket.once('close', () => clearTimeout(timer));
    };
    done(null, payload);
  });

  app.setErrorHandler((err: FastifyError, request, reply) => {
    // A method Fastify takes a body with (QUERY) on a path with no route for it is refused for its
    // missing Content-Type before the 404/405 handler runs; answer it as any unrouted method.
    if (request.is404 && err.code === 'FST_ERR_ROUTE_MISSING_CONTENT_TYPE') return notFound(request, reply);
    const appErr = toAppError(err, request);
    if (appErr) return sendError(request, reply, appErr);
    request.log.error({ err }, 'unhandled error');
    return sendError(request, reply, new AppError('internal_error', 'An unexpected error occurred.'));
  });

  const notFound = (request: FastifyRequest, reply: FastifyReply) => {
    if (UNDECODABLE in request.raw) {
      return sendError(
        request,
        reply,
        new AppError('not_found', 'No such resource: the URL cannot be decoded.'),
      );
    }
    const path = request.url.split('?')[0] ?? '/';
    const allowed = [...new Set(routes.filter((r) => r.pattern.test(path)).map((r) => r.method))];
    if (allowed.length > 0) {
      reply.header('allow', allowed.join(', '));
      return sendError(
        request,
        reply,
        new AppError(
          'method_not_allowed',
          `${request.method} is not allowed on ${path}; use ${allowed.join(', ')}.`,
        ),
      );
    }
    return sendError(request, reply, new AppError('not_found', `No route ${request.method} ${path}.`));
  };
  app.setNotFoundHandler(notFound);
  // A path or method with no route is a 404 or 405 whatever the body: answered before the body is
  // read (after every onRequest hook, so a valid key is still counted), not after up to
  // ADS_BODY_LIMIT of it has been read and parsed for nothing, with no key needed to make it so.
  app.addHook('preParsing', (request, reply, payload, done) => {
    if (!request.is404) {
      // `Expect: 100-continue` (curl sends it above 1 MB): asked to send the body only now, once
      // the key, rate limits and route have let the request through, and never for a body over
      // the limit, which the parser then refuses (413) without the client having sent it.
      if (CONTINUE in request.raw) {
        const length = Number(request.headers['content-length']);
        if (!(length > (request.routeOptions.bodyLimit ?? Number.POSITIVE_INFINITY)))
          reply.raw.writeContinue();
      }
      return done(null, payload);
    }
    notFound(request, reply);
  });
  return notFound;
}

/** Set on a request that asked `Expect: 100-continue`, which Node then leaves to us (see above). */
const CONTINUE = Symbol('expects 100-continue');

/** Set on a request whose path cannot be decoded (see `rewriteUndecodable`). */
const UNDECODABLE = Symbol('undecodable path');

/**
 * Fastify's `rewriteUrl` option. A path that cannot be decoded (a malformed escape, or bytes that
 * are not UTF-8) fails in the router, before any hook: its 404 went out without the security
 * headers, a log line or a metric, and under /v1 without checking the key or counting it, so it
 * lacked the rate-limit headers every answer to a limited key carries (decisions §8). Such a
 * request is routed to a path no route has instead (`/v1/-` under /v1, else `/-`), so it goes
 * through every hook like any unknown path, and is answered as undecodable there.
 */
export function rewriteUndecodable(req: IncomingMessage): string {
  const url = req.url ?? '/';
  const end = url.search(/[?#]/);
  const path = end === -1 ? url : url.slice(0, end);
  if (!path.includes('%')) return url;
  try {
    decodeURIComponent(path);
    return url;
  } catch {
    Object.defineProperty(req, UNDECODABLE, { value: true });
    return url.startsWith('/v1/') ? '/v1/-' : '/-';
  }
}

/**
 * Fastify's `frameworkErrors` option: errors raised before routing get the envelope too. A path
 * parameter longer than the router's limit, or one that cannot be decoded, is an id no resource
 * has (decisions §1: 404). Neither should come here any more (the router's limit is above any
 * path Node accepts, and rewriteUndecodable routes undecodable paths): an answer from here runs no
 * hook, so it has no security or rate-limit headers and no log line.
 */
export function frameworkErrors(err: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  const appErr =
    err.code === 'FST_ERR_MAX_PARAM_LENGTH'
      ? new AppError('not_found', 'No such resource.')
      : err.code === 'FST_ERR_BAD_URL'
        ? new AppError('not_found', 'No such resource: the URL cannot be decoded.')
        : (toAppError(err) ?? new AppError('invalid_request', 'The request is malformed.'));
  reply.header('x-request-id', request.id);
  return sendError(request, reply, appErr);
}

/**
 * Two requests Node would answer itself, outside the envelope:
 * - an HTTP/1.1 request without `Host` (RFC 9112 says 400): `400 invalid_request` here, with a
 *   request id (HTTP/1.0 needs no Host);
 * - an `Expect` other than `100-continue`, which Node would answer with a bare 417: the service has
 *   no expectations to meet, and RFC 9110 lets a server ignore one it does not support, so the
 *   request is served as if the header were absent.
 */
export function installHostAndExpect(app: FastifyInstance) {
  app.addHook('onRequest', (request, _reply, done) => {
    if (request.headers.host === undefined && request.raw.httpVersion === '1.1') {
      done(new AppError('invalid_request', 'An HTTP/1.1 request must carry a Host header.'));
      return;
    }
    // The query parser keeps an escape it cannot decode as it is (`tag:%FF` read as `tag:%25FF`,
    // `50%` as `50%25`): refused, as an undecodable path (404) and a body that is not UTF-8 are.
    const { url } = request;
    const q = url.indexOf('?');
    if (q !== -1 && url.indexOf('%', q) !== -1 && !decodable(url.slice(q + 1))) {
      done(
        new AppError(
          'invalid_request',
          'The query string cannot be decoded: each % must begin an escape of UTF-8 bytes (a % sign itself is %25).',
          { details: [{ field: 'query', message: 'cannot be decoded as UTF-8' }] },
        ),
      );
      return;
    }
    done();
  });
  app.server.on('checkExpectation', (req, res) => app.server.emit('request', req, res));
  // Node would answer `100 Continue` at once, before any check: a client without a valid key, or
  // with a body over the limit, then sent megabytes only to be refused. The preParsing hook above
  // answers it once the request may go on; a refusal before then is the final answer.
  app.server.on('checkContinue', (req, res) => {
    (req as IncomingMessage & { [CONTINUE]?: true })[CONTINUE] = true;
    app.server.emit('request', req, res);
  });
}

function decodable(text: string): boolean {
  try {
    decodeURIComponent(text);
    return true;
  } catch {
    return false;
  }
}

const CLIENT_ERROR_MESSAGES: Record<string, string> = {
  HPE_HEADER_OVERFLOW: 'The request line and headers must not exceed 16 KB.',
  ERR_HTTP_REQUEST_TIMEOUT: 'The request did not arrive in time.',
};

/** A request answered before the app saw it: its id, and its method and target when readable. */
export interface UnparsedRequest {
  requestId: string;
  method: string;
  url: string;
  status: number;
}

// The start of a request line, from the bytes the parser refused (`rawPacket`, when it has them).
const REQUEST_LINE = /^([A-Z]{3,7}) ([\x21-\x7e]+) HTTP\/1\.[01]\r?\n/;
const KNOWN_METHODS = new Set(METHODS);

function requestLineOf(err: Error & { rawPacket?: unknown }): { method: string; url: string } {
  const raw = Buffer.isBuffer(err.rawPacket) ? err.rawPacket.toString('latin1', 0, 65_536) : '';
  const line = REQUEST_LINE.exec(raw);
  // An unknown method is not echoed: the metrics' method label stays one of a known few.
  if (!line || !KNOWN_METHODS.has(line[1]!)) return { method: '-', url: '-' };
  return { method: line[1]!, url: line[2]! };
}

/**
 * Fastify's `clientErrorHandler`: requests Node's HTTP parser refuses before the app sees them (a
 * URL or headers over 16 KB, malformed HTTP) are answered `400 invalid_request` in the envelope,
 * with a request id, then the connection is closed. `answered` logs and counts each (no hook runs
 * for them), so the id the client was given can be found in the log.
 */
export const clientErrorHandler =
  (answered: (request: UnparsedRequest) => void) => (err: Error & { code?: string }, socket: Duplex) => {
    if (err.code === 'ECONNRESET' || socket.destroyed) return;
    if (socket.writable) {
      const id = newId('request');
      answered({ requestId: id, ...requestLineOf(err), status: 400 });
      const message = CLIENT_ERROR_MESSAGES[err.code ?? ''] ?? 'The request is not valid HTTP.';
      socket.write(rawError(id, 400, 'Bad Request', 'invalid_request', message));
    }
    socket.destroy(err);
  };

/** A whole HTTP/1.1 error answer in the envelope, for a socket the app does not serve; it closes. */
function rawError(id: string, status: number, reason: string, code: string, message: string, extra = {}) {
  const body = JSON.stringify({ error: { code, message, request_id: id } });
  const headers = {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    'x-request-id': id,
    ...SECURITY_HEADERS,
    'cache-control': 'no-store',
    ...extra,
    connection: 'close',
  };
  const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`);
  return `HTTP/1.1 ${status} ${reason}\r\n${lines.join('')}\r\n${body}`;
}

/**
 * A `CONNECT` request (a client taking the service for a proxy): Node hands it to a `connect`
 * listener, and without one closes the connection with no answer at all. It is answered
 * `405 method_not_allowed` in the envelope, logged and counted like the parser's refusals.
 */
export function refuseConnect(
  server: NodeJS.EventEmitter,
  answered: (request: UnparsedRequest) => void,
): void {
  server.on('connect', (req: IncomingMessage, socket: Duplex) => {
    const id = newId('request');
    answered({ requestId: id, method: 'CONNECT', url: req.url ?? '-', status: 405 });
    const message = 'CONNECT is not allowed: this service is not a proxy.';
    socket.end(rawError(id, 405, 'Method Not Allowed', 'method_not_allowed', message));
  });
}
