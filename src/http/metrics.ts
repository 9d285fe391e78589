import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { UnparsedRequest } from './error-handler.ts';

/**
 * The process's own metrics (CPU, memory, event-loop delay, GC: prom-client's defaults), collected
 * once per process however many apps it builds (tests build many).
 */
let processRegistry: Registry | undefined;
function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry, prefix: 'ads_' });
  }
  return processRegistry;
}

/**
 * Request duration buckets, in seconds: from a cached read to a slow search, and to a webhook test
 * ping, which waits for the receiver up to ADS_WEBHOOK_TIMEOUT_MS (10 s by default).
 */
const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/**
 * `GET /metrics` in the Prometheus text format (decisions §9), no key needed: requests by method,
 * route template and status, their durations, whether the rate limiter fell back to per-process
 * counters, and the process metrics. Labels are route templates (`/v1/data/:id`), never ids,
 * accounts or keys, so the series stay few and say nothing about any one account. Returns the
 * per-response step, which the app's onResponse hook calls, and the step for a request the HTTP
 * parser refused, which the app's client error handler calls.
 */
export function installMetrics(app: FastifyInstance): {
  observe: (request: FastifyRequest, reply: FastifyReply) => void;
  /** A request the HTTP parser refused: counted as `unmatched`, with no duration known. */
  observeUnparsed: (request: UnparsedRequest) => void;
} {
  const registry = new Registry();
  const requests = new Counter({
    name: 'ads_http_requests_total',
    help: 'HTTP requests answered, by method, route template and status.',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'ads_http_request_duration_seconds',
    help: 'Time from receiving a request to the end of its answer, by method and route template.',
    labelNames: ['method', 'route'] as const,
    buckets: BUCKETS,
    registers: [registry],
  });
  new Gauge({
    name: 'ads_rate_limiter_degraded',
    help: '1 while the rate limiter counts per process because Redis is unreachable, else 0.',
    registers: [registry],
    collect() {
      this.set(app.ctx.rateLimiter.health().degraded ? 1 : 0);
    },
  });

  // Now, not at the first scrape: the CPU and GC series count from the moment they are set up.
  const processRegistry = processMetrics();
  app.get('/metrics', async (_request, reply) => {
    const merged = Registry.merge([processRegistry, registry]);
    return reply.type(merged.contentType).send(await merged.metrics());
  });

  return {
    observe: (request, reply) => {
      const route = request.routeOptions.url ?? 'unmatched';
      requests.inc({ method: request.method, route, status: reply.statusCode });
      duration.observe({ method: request.method, route }, reply.elapsedTime / 1000);
    },
    observeUnparsed: ({ method, status }) => requests.inc({ method, route: 'unmatched', status }),
  };
}
