import type { FastifyInstance, FastifyRequest } from 'fastify';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { findKeyForAuth } from '../modules/api-keys/repo.ts';
import { effectiveScopes, parseScopes } from '../modules/api-keys/scopes.ts';
import { hashSecret, looksLikeApiKey } from '../modules/api-keys/tokens.ts';
import { AppError, forbidden, unauthorized } from './errors.ts';
import type { AuthContext } from './types.ts';

function bearer(request: FastifyRequest): string | null {
  const header = request.headers.authorization;
  if (!header) return null;
  const match = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
  return match?.[1] ?? null;
}

/**
 * Resolves the key on every request (no cache), so a revoked key or a lowered role is refused on the
 * very next call on every instance. Routes declare `config.scope`; routes without it are public.
 */
export function installAuth(app: FastifyInstance) {
  const { config } = app.ctx;
  // Failed authentications per client address: stops key guessing without touching valid callers.
  const failures = new RateLimiterMemory({ points: config.authFailuresPerMinute, duration: 60 });

  const throttled = async (ip: string) => {
    const res = await failures.get(ip);
    if (res && res.consumedPoints >= config.authFailuresPerMinute) {
      const retry = Math.max(1, Math.ceil(res.msBeforeNext / 1000));
      throw new AppError('rate_limited', 'Too many failed authentications from this address.', {
        headers: { 'retry-after': String(retry) },
      });
    }
  };

  const fail = async (ip: string, message?: string): Promise<never> => {
    await failures.penalty(ip, 1).catch((e: unknown) => {
      if (!(e instanceof RateLimiterRes)) throw e;
    });
    throw unauthorized(message);
  };

  app.decorateRequest('auth', null as unknown as AuthContext);

  app.addHook('onRequest', async (request) => {
    const needed = request.routeOptions.config.scope;
    if (needed === undefined) return;
    await throttled(request.ip);
    const token = bearer(request);
    if (!token) return fail(request.ip);
    if (!looksLikeApiKey(token)) return fail(request.ip, 'The API key is malformed, unknown or revoked.');
    const row = await findKeyForAuth(app.ctx.database.db, hashSecret(token));
    if (!row || row.revoked_at !== null || row.status !== 'active') {
      return fail(request.ip, 'The API key is malformed, unknown or revoked.');
    }
    const scopes = effectiveScopes(parseScopes(row.scopes), row.role);
    request.auth = {
      accountId: row.account_id,
      userId: row.user_id,
      keyId: row.key_id,
      role: row.role,
      plan: row.plan,
      scopes,
    };
  });
}

/**
 * Checks the route's scope against the key's effective scopes. Installed after the rate limiter, so
 * a refused call still counts against the key and carries its rate-limit headers.
 */
export function installScopeCheck(app: FastifyInstance) {
  app.addHook('onRequest', async (request) => {
    const needed = request.routeOptions.config.scope;
    if (needed === undefined || needed === 'any') return;
    const { scopes } = request.auth;
    if (!scopes.includes(needed)) {
      throw forbidden(`This call needs the '${needed}' scope; the key has ${scopes.join(', ') || 'none'}.`);
    }
  });
}
