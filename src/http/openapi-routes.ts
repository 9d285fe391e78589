import type { RouteOptions } from 'fastify';
import { Type } from 'typebox';

type RouteSchema = Record<string, unknown>;

/** Scope names as a route declares them (`config.scope`); absent means a public route. */
export type RouteScope = 'read' | 'write' | 'admin' | 'any';

/** The vendor extension naming the scope an operation needs; the response pass reads it back. */
export const SCOPE_EXTENSION = 'x-required-scope';

const Liveness = Type.Object(
  { status: Type.String({ enum: ['ok'] }) },
  { description: 'The process is up.', examples: [{ status: 'ok' }] },
);
const Readiness = Type.Object({
  status: Type.String({ enum: ['ok', 'unavailable'] }),
  checks: Type.Object({
    database: Type.Boolean({ description: 'Whether the database answered.' }),
    rate_limiter: Type.Object(
      {
        backend: Type.String({ enum: ['memory', 'redis'] }),
        degraded: Type.Boolean({
          description: 'Redis is unreachable and counters are per process; readiness does not fail.',
        }),
        detail: Type.Optional(Type.String()),
      },
      { description: "The rate limiter's counters." },
    ),
  }),
});

/**
 * The probes are plain routes without schemas (they answer load balancers, not API clients); their
 * documentation lives here so the document still describes every route.
 */
const PROBES: Record<string, RouteSchema> = {
  '/healthz': {
    tags: ['Health'],
    summary: 'Liveness probe: the process is up',
    response: { 200: Liveness },
  },
  '/readyz': {
    tags: ['Health'],
    summary: 'Readiness probe: the database is reachable',
    response: {
      200: { ...Readiness, description: 'Ready to serve.' },
      503: { ...Readiness, description: 'Not ready: the database did not answer.' },
    },
  },
  '/metrics': {
    tags: ['Health'],
    summary: 'Prometheus metrics: requests by route and status, durations, the process',
    response: {
      200: {
        description: 'The Prometheus text format (version 0.0.4).',
        content: { 'text/plain': { schema: Type.String() } },
      },
    },
  },
};

const camel = (words: string[]) =>
  words
    .flatMap((w) => w.split(/[-_]/))
    .filter(Boolean)
    .map((w, i) => (i === 0 ? w.toLowerCase() : w[0]!.toUpperCase() + w.slice(1)))
    .join('');

/**
 * A stable operationId from method and path: `PATCH /v1/data/:id` -> `patchDataById`. Unique because
 * method + path is, and readable enough to name generated client methods.
 */
export function operationIdOf(method: string, url: string): string {
  const segments = url
    .replace(/^\/v1(?=\/)/, '')
    .split('/')
    .filter(Boolean)
    .map((s) => (s.startsWith(':') ? `by-${s.slice(1)}` : s));
  return camel([method, ...segments]);
}

function scopeNote(scope: RouteScope | undefined): string {
  if (scope === undefined) return 'No API key needed.';
  if (scope === 'any') return 'Needs an API key (any scope).';
  return `Needs an API key with the \`${scope}\` scope.`;
}

/**
 * The per-route step of document generation (`@fastify/swagger` `transform`): the security
 * requirement and the scope come from the route's `config.scope`, the single place auth is declared,
 * so the document cannot disagree with what the auth hook enforces.
 */
export function transformRoute({
  schema,
  url,
  route,
}: {
  schema: unknown;
  url: string;
  route: RouteOptions;
}) {
  const base = (schema as RouteSchema | undefined) ?? PROBES[url];
  if (!base || base.hide) return { schema: base ?? {}, url };
  const scope = route.config?.scope as RouteScope | undefined;
  const method = Array.isArray(route.method) ? route.method[0]! : route.method;
  const description = [base.description, scopeNote(scope)].filter(Boolean).join('\n\n');
  const out: RouteSchema = {
    ...base,
    operationId: base.operationId ?? operationIdOf(String(method), url),
    description,
    // OpenAPI 3.1 lets a non-OAuth requirement list the roles it needs: the scope goes there too.
    security: scope === undefined ? [] : [{ bearer: scope === 'any' ? [] : [scope] }],
  };
  if (scope !== undefined) out[SCOPE_EXTENSION] = scope;
  return { schema: out, url };
}
