import type { FastifyInstance } from 'fastify';
import { AppError } from './errors.ts';

const OPEN_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

/**
 * Behind a TLS-terminating proxy the service listens in plain HTTP; it then refuses any request the
 * proxy did not receive over HTTPS (decisions §3). Health probes stay open for the load balancer.
 */
export function installHttpsGuard(app: FastifyInstance) {
  app.addHook('onRequest', async (request) => {
    // The route matched, not the raw URL: `/health%7A` reaches the probe as well.
    if (OPEN_PATHS.has(request.routeOptions.url ?? '')) return;
    // The nearest proxy's entry is the last one; earlier ones may come from the client.
    const header = request.headers['x-forwarded-proto'];
    const joined = Array.isArray(header) ? header.join(',') : (header ?? '');
    if (joined.split(',').at(-1)?.trim().toLowerCase() !== 'https') {
      throw new AppError('https_required', 'HTTPS is required: this request did not arrive over HTTPS.');
    }
  });
}

/** HSTS and no sniffing, on every response (also those written before routing). */
export const SECURITY_HEADERS = {
  'strict-transport-security': 'max-age=31536000; includeSubDomains',
  'x-content-type-options': 'nosniff',
} as const;

/** Headers every response carries (HSTS, no sniffing, no caching of API answers). */
export function installSecurityHeaders(app: FastifyInstance) {
  // A callback hook: no promise per response for work that never waits.
  app.addHook('onSend', (request, reply, payload, done) => {
    reply.header('x-request-id', request.id);
    reply.headers(SECURITY_HEADERS);
    if (!reply.hasHeader('cache-control')) reply.header('cache-control', 'no-store');
    done(null, payload);
  });
}
