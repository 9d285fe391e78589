import { isIPv6 } from 'node:net';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { v6ToHextets } from '../lib/ip.ts';
import {
  findKeyForAuth,
  findKeyForAuthById,
  type KeyForAuth,
  readAuthEpoch,
} from '../modules/api-keys/repo.ts';
import { effectiveScopes, parseScopes } from '../modules/api-keys/scopes.ts';
import { hashSecret, looksLikeApiKey } from '../modules/api-keys/tokens.ts';
import { AppError, BAD_KEY_MESSAGE, forbidden, unauthorized } from './errors.ts';
import type { AuthContext } from './types.ts';

/** The bearer token as sent, or null when the request has none. */
export function bearerToken(request: FastifyRequest): string | null {
  const header = request.headers.authorization;
  if (!header) return null;
  const match = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
  return match?.[1] ?? null;
}

/**
 * Whom failed authentications are counted against: an IPv4 address, or the /64 network of an IPv6
 * one. A single IPv6 client is usually given a whole /64 and can send from any address in it, so
 * counting per address would let it rotate through 2^64 fresh budgets. An IPv4-mapped address
 * counts as its IPv4 address, and so does one in the NAT64 well-known prefix 64:ff9b::/96 (RFC
 * 6052): behind a stateless translator (SIIT-DC, RFC 7755) every IPv4 client arrives from that one
 * /64, and would otherwise share one budget, so a single one guessing keys locked out all the rest.
 */
export function failureKey(ip: string): string {
  if (typeof ip !== 'string' || !ip.includes(':')) return String(ip);
  const address = ip.split('%')[0]!.toLowerCase();
  // Anything else a proxy may have written (a port, brackets) is counted as it is.
  if (!isIPv6(address)) return ip;
  const h = v6ToHextets(address);
  const mapped = h.slice(0, 5).every((x) => x === 0) && h[5] === 0xffff;
  const nat64 = h[0] === 0x64 && h[1] === 0xff9b && h.slice(2, 6).every((x) => x === 0);
  if (mapped || nat64) {
    const [high, low] = [h[6]!, h[7]!];
    return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
  }
  return `${h
    .slice(0, 4)
    .map((x) => x.toString(16))
    .join(':')}::/64`;
}

/** Bound of each in-memory map below (tokens already identified, addresses with failures). */
const KEY_CACHE_SIZE = 10_000;

/**
 * Resolves the key on every request, so a revoked key or a lowered role is refused on the very next
 * call on every instance. A token is identified by its SHA-256 once; after that by its key's primary
 * key (token -> account and key id, a fact that never changes). On PostgreSQL the key, user and
 * account rows are read on every request. On SQLite what they allow is kept per token with the auth
 * epoch it was read under (a counter every update or delete of those tables raises, by trigger,
 * whoever writes: migration 0021), and each request reads only that one-row counter, rereading the
 * three rows when it moved. Routes declare `config.scope`; routes without it are public.
 */
export function installAuth(app: FastifyInstance) {
  const { config, database } = app.ctx;
  const { db, dialect } = database;
  // Failed authentications per client address: stops key guessing without touching valid callers.
  const failures = new RateLimiterMemory({ points: config.authFailuresPerMinute, duration: 60 });
  // Addresses with a failure in the limiter; the others skip asking it (the common case). Once the
  // set is full every address is asked again, as before.
  const failedIps = new Set<string>();
  // Bearer tokens already identified by their hash -> their key's primary key (oldest dropped first),
  // and what the rows last read for it allow, with the auth epoch they were read under (SQLite).
  const known = new Map<
    string,
    { accountId: string; keyId: string; auth: AuthContext | null; epoch: number | undefined }
  >();

  const tooMany = (msBeforeNext: number) =>
    new AppError('rate_limited', 'Too many failed authentications from this address.', {
      headers: { 'retry-after': String(Math.max(1, Math.ceil(msBeforeNext / 1000))) },
    });

  const throttled = async (ip: string) => {
    if (!failedIps.has(ip) && failedIps.size < KEY_CACHE_SIZE) return;
    const res = await failures.get(ip);
    if (!res) {
      failedIps.delete(ip);
      return;
    }
    if (res.consumedPoints >= config.authFailuresPerMinute) throw tooMany(res.msBeforeNext);
  };

  /**
   * Counts a failure, and is itself the check for requests that passed `throttled` together: of a
   * burst of guesses sent at once (all checked before any failed), only the first
   * ADS_AUTH_FAILURES_PER_MINUTE get their 401; the rest get the 429, so a burst buys no guesses.
   */
  const recordFailure = async (ip: string) => {
    if (failedIps.size < KEY_CACHE_SIZE) failedIps.add(ip);
    try {
      await failures.consume(ip, 1);
    } catch (e) {
      if (!(e instanceof RateLimiterRes)) throw e;
      throw tooMany(e.msBeforeNext);
    }
  };

  const fail = async (ip: string, message?: string): Promise<never> => {
    await recordFailure(ip);
    throw unauthorized(message);
  };

  /** What a request authenticates as with the key's rows, or null when the key cannot be used. */
  const authOf = (row: KeyForAuth | undefined): AuthContext | null =>
    row !== undefined && row.revoked_at === null && row.status === 'active'
      ? Object.freeze({
          accountId: row.account_id,
          userId: row.user_id,
          keyId: row.key_id,
          role: row.role,
          plan: row.plan,
          scopes: Object.freeze(effectiveScopes(parseScopes(row.scopes), row.role)),
        })
      : null;

  const lookup = async (token: string): Promise<AuthContext | null> => {
    const hit = known.get(token);
    // Read before the rows, so rows read after a change are never filed under an older epoch.
    const epoch = await readAuthEpoch(db, dialect);
    if (hit !== undefined && epoch !== undefined && hit.epoch === epoch) return hit.auth;
    const row = hit
      ? await findKeyForAuthById(db, dialect, hit.accountId, hit.keyId)
      : await findKeyForAuth(db, dialect, hashSecret(token));
    const auth = authOf(row);
    if (row) {
      if (hit === undefined && known.size >= KEY_CACHE_SIZE)
        known.delete(known.keys().next().value as string);
      known.set(token, { accountId: row.account_id, keyId: row.key_id, auth, epoch });
    } else if (hit) {
      known.delete(token);
    }
    return auth;
  };

  app.decorateRequest('auth', null as unknown as AuthContext);

  app.addHook('onRequest', async (request) => {
    const needed = request.routeOptions.config.scope;
    if (needed === undefined) {
      // An unknown path or method stays a 404/405 whatever the key, but a request that carries a
      // valid key counts against it and gets its rate-limit headers like any other (decisions §8:
      // every response to a key with limits). A bad key counts as a failed authentication.
      const token = request.is404 ? bearerToken(request) : null;
      if (token === null) return;
      const client = failureKey(request.ip);
      await throttled(client);
      const auth = looksLikeApiKey(token) ? await lookup(token) : null;
      if (auth) request.auth = auth;
      else await recordFailure(client);
      return;
    }
    const client = failureKey(request.ip);
    await throttled(client);
    const token = bearerToken(request);
    if (!token) return fail(client);
    if (!looksLikeApiKey(token)) return fail(client, BAD_KEY_MESSAGE);
    const auth = await lookup(token);
    if (!auth) return fail(client, BAD_KEY_MESSAGE);
    request.auth = auth;
  });
}

/**
 * Checks the route's scope against the key's effective scopes. Installed after the rate limiter, so
 * a refused call still counts against the key and carries its rate-limit headers.
 */
export function installScopeCheck(app: FastifyInstance) {
  // A callback hook: no promise per request for a check that never waits.
  app.addHook('onRequest', (request, _reply, done) => {
    const needed = request.routeOptions.config.scope;
    if (needed === undefined || needed === 'any') return done();
    const { scopes } = request.auth;
    if (!scopes.includes(needed)) {
      return done(
        forbidden(`This call needs the '${needed}' scope; the key has ${scopes.join(', ') || 'none'}.`),
      );
    }
    done();
  });
}
