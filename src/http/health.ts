import type { FastifyPluginAsync } from 'fastify';
import { ping } from '../db/database.ts';

/** Liveness and readiness probes; no key needed. */
export const healthRoutes: FastifyPluginAsync = async (app) => {
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_request, reply) => {
    const database = await ping(app.ctx.database);
    return reply
      .code(database ? 200 : 503)
      .send({ status: database ? 'ok' : 'unavailable', checks: { database } });
  });
};
