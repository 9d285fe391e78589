import type { FastifyInstance } from 'fastify';
import { rateLimitHeaders } from '../ratelimit/headers.ts';
import { isPlan } from '../ratelimit/plans.ts';
import { AppError } from './errors.ts';

/**
 * Counts every authenticated request against its key's minute and day budgets (decisions §8). Runs
 * after authentication, so the plan is the one read from the database on this very request.
 */
export function installRateLimit(app: FastifyInstance) {
  app.addHook('onRequest', async (request, reply) => {
    // `auth` is set on every route that needs a key, and on a 404/405 that came with a valid one.
    if (!request.auth) return;
    const plan = isPlan(request.auth.plan) ? request.auth.plan : 'free';
    const decision = await app.ctx.rateLimiter.consume(request.auth.keyId, plan);
    const headers = rateLimitHeaders(decision);
    if (decision.limited) {
      const window = decision.refusedBy ?? 'minute';
      throw new AppError(
        'rate_limited',
        `Rate limit exceeded for this API key (${plan} plan, per ${window}).`,
        {
          headers,
        },
      );
    }
    reply.headers(headers);
  });
}
