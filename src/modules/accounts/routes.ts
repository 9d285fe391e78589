import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ok } from '../../http/envelope.ts';
import { notFound } from '../../http/errors.ts';
import { errorResponses } from '../../http/schemas.ts';
import { isPlan, PLAN_LIMITS } from '../../ratelimit/plans.ts';
import { findAccount } from './repo.ts';
import { AccountEnvelope } from './schemas.ts';

const iso = (epochSeconds: number) => new Date(epochSeconds * 1000).toISOString();

/** `GET /account`: the caller's account, its plan and limits, and the calling key's usage. */
export const accountRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/account',
    {
      config: { scope: 'read' },
      schema: {
        tags: ['Account'],
        summary: "The caller's account, plan, limits and current usage",
        response: { 200: AccountEnvelope, ...errorResponses(401, 403, 429) },
      },
    },
    async (request) => {
      const account = await findAccount(app.ctx.database.db, request.auth.accountId);
      if (!account) throw notFound('account');
      const plan = isPlan(account.plan) ? account.plan : 'free';
      const limits = PLAN_LIMITS[plan];
      const usage = await app.ctx.rateLimiter.usage(request.auth.keyId, plan);
      const window = (name: 'minute' | 'day') => {
        const w = usage.windows.find((x) => x.name === name);
        return w ? { used: w.used, limit: w.limit, remaining: w.remaining, reset_at: iso(w.resetAt) } : null;
      };
      const minute = window('minute');
      const day = window('day');
      return ok(request, {
        id: account.id,
        name: account.name,
        plan,
        created_at: account.created_at,
        limits: limits ? { requests_per_minute: limits.perMinute, requests_per_day: limits.perDay } : null,
        usage: minute && day ? { api_key_id: request.auth.keyId, minute, day } : null,
      });
    },
  );
};
