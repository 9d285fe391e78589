import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/**
 * Response headers a browser script may read on a cross-origin answer: the request id, the rate
 * limits (and when to retry), and whether an answer was replayed. The rest (Content-Type and the
 * like) are readable anyway.
 */
export const CORS_EXPOSED_HEADERS = [
  'X-Request-Id',
  'X-RateLimit-Limit',
  'X-RateLimit-Remaining',
  'X-RateLimit-Reset',
  'RateLimit',
  'RateLimit-Policy',
  'Retry-After',
  'Idempotent-Replayed',
  'WWW-Authenticate',
];

/** How long a browser may keep a preflight's answer, in seconds. */
export const CORS_MAX_AGE = 600;

/**
 * Cross-origin calls from browser pages (ADS_CORS_ORIGINS; off without it). Keys travel in the
 * Authorization header, never in cookies, so no credentials mode is offered and a page of another
 * site cannot act with a user's key unless it holds the key. A preflight is answered before the
 * key is read (a browser sends none with it) and is neither authenticated nor rate-limited; the
 * answers themselves carry Access-Control-Allow-Origin for an allowed origin only.
 */
export async function installCors(
  app: FastifyInstance,
  origins: readonly string[] | '*',
  notFound: (request: FastifyRequest, reply: FastifyReply) => unknown,
) {
  if (origins !== '*' && origins.length === 0) return;
  // An OPTIONS that is not a preflight (no Origin, or no Access-Control-Request-Method) is what it
  // is without CORS: 405 on a path with routes (with Allow), 404 elsewhere, in the envelope.
  app.addHook('onRequest', (request, reply, done) => {
    if (
      request.method === 'OPTIONS' &&
      (request.headers.origin === undefined || request.headers['access-control-request-method'] === undefined)
    ) {
      notFound(request, reply);
      return;
    }
    done();
  });
  // Loaded only when asked for: start-up reads no module it does not use (docs/benchmarks.md).
  const { default: cors } = await import('@fastify/cors');
  await app.register(cors, {
    origin: origins === '*' ? '*' : [...origins],
    methods: ['GET', 'HEAD', 'POST', 'PATCH', 'DELETE'],
    allowedHeaders: ['Authorization', 'Content-Type', 'Idempotency-Key'],
    exposedHeaders: CORS_EXPOSED_HEADERS,
    maxAge: CORS_MAX_AGE,
    credentials: false,
    // Non-preflight OPTIONS never reach it (the hook above); a preflight is answered for any path.
    strictPreflight: false,
  });
}
