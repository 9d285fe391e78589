import type { FastifyPluginAsync } from 'fastify';
import { ping } from '../db/database.ts';

/**
 * Liveness and readiness probes; no key needed. Readiness fails only when the database does not
 * answer: a rate limiter that fell back to per-process counters (Redis unreachable) still serves,
 * so it is reported (`checks.rate_limiter.degraded`) without failing readiness.
 */
export const healthRoutes: FastifyPluginAsync = async (app) => {
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_request, reply) => {
    const database = await ping(app.ctx.database);
    const rateLimiter = app.ctx.rateLimiter.health();
    return reply.code(database ? 200 : 503).send({
      status: database ? 'ok' : 'unavailable',
      checks: { database, rate_limiter: rateLimiter },
    });
  });
};
