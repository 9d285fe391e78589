import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifySchema,
  type FastifySchemaCompiler,
  LogController,
} from 'fastify';
import type { Logger } from 'pino';
import type { AppContext } from './context.ts';
import { installAuth, installScopeCheck } from './http/auth.ts';
import { installCors } from './http/cors.ts';
import {
  clientErrorHandler,
  frameworkErrors,
  installErrorHandling,
  installHostAndExpect,
  refuseConnect,
  rewriteUndecodable,
  type UnparsedRequest,
} from './http/error-handler.ts';
import { healthRoutes } from './http/health.ts';
import { installHttpsGuard, installSecurityHeaders } from './http/https-guard.ts';
import { installIdempotency } from './http/idempotency.ts';
import { installJsonBody } from './http/json-body.ts';
import { installMetrics } from './http/metrics.ts';
import { installOpenApi } from './http/openapi.ts';
import { installRateLimit } from './http/rate-limit.ts';
import { installResponseBatching } from './http/response-batching.ts';
import { ErrorBody } from './http/schemas.ts';
import { boundPipelinedRequests, keepTlsParsersReading } from './http/tls-parsing.ts';
import './http/types.ts';
import { createValidatorCompiler, refuseUndeclaredInput } from './http/validation.ts';
import { newId } from './lib/ids.ts';
import { LazyChildLogger, requestLineWriter } from './lib/logger.ts';
import { accountRoutes } from './modules/accounts/routes.ts';
import { apiKeyRoutes } from './modules/api-keys/routes.ts';
import { dataRoutes } from './modules/data/routes.ts';
import { searchRoutes } from './modules/search/routes.ts';
import { userRoutes } from './modules/users/routes.ts';
import { webhookRoutes } from './modules/webhooks/routes.ts';

export interface BuildOptions {
  /** TLS material when the app serves HTTPS itself; absent for inject() and behind a proxy. */
  https?: { key: string | Buffer; cert: string | Buffer };
}

type Compiled = ((...args: never[]) => unknown) & { errors?: unknown };

/**
 * Compiles on first call instead of at start-up: the service has ~40 routes with a validator per
 * part and a serializer per status, and compiling them all was a large share of start-up. The
 * validator's `errors` (which Fastify reads after a failed call) are carried over.
 */
function lazily<F extends Compiled>(compile: () => F): F {
  let fn: F | undefined;
  const wrapper = ((...args: never[]) => {
    fn ??= compile();
    const result = fn(...args);
    wrapper.errors = fn.errors;
    return result;
  }) as F;
  return wrapper;
}

// Fastify's own default serializer compiler (fast-json-stringify): the copy fastify itself uses, so
// the start-up bundle holds it once (loading a second copy through require cost ~50 ms of start-up).
type SerializerFactory = (
  externalSchemas: unknown,
  options: unknown,
) => (route: { schema?: unknown }) => (data: unknown) => string;
const serializerFactory = SerializerSelector() as unknown as SerializerFactory;

/** Serializers compiled lazily, and once per distinct schema (every route shares the error body's). */
function buildLazySerializer(externalSchemas: unknown, options: unknown) {
  const compile = serializerFactory(externalSchemas, options);
  const bySchema = new Map<string, (data: unknown) => string>();
  return (route: { schema?: unknown }) =>
    lazily(() => {
      const key = JSON.stringify(route.schema);
      let fn = bySchema.get(key);
      if (!fn) {
        fn = compile(route);
        bySchema.set(key, fn);
      }
      return fn;
    });
}

/** Longest path parameter the router matches (see routerOptions). */
const MAX_PARAM_LENGTH = 16 * 1024;

/** Builds the HTTP app over an open, migrated database. Reads no environment, listens on nothing. */
export async function buildApp(ctx: AppContext, opts: BuildOptions = {}): Promise<FastifyInstance> {
  const { config } = ctx;
  // Set once the log line writer and the metrics exist; the server listens only after that.
  let answeredUnparsed: (request: UnparsedRequest) => void = () => {};
  const app = Fastify({
    loggerInstance: ctx.logger as FastifyBaseLogger,
    // One log line per response (below) instead of Fastify's two.
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'request_id' }),
    // request.log binds the request id, but is made only when something logs through it.
    childLoggerFactory: (logger, bindings, options) =>
      new LazyChildLogger(logger as Logger, bindings, options) as unknown as FastifyBaseLogger,
    genReqId: () => newId('request'),
    requestIdHeader: false,
    bodyLimit: config.bodyLimit,
    // Trust exactly one hop: the proxy's own X-Forwarded-* entry, never what the client put before it.
    trustProxy: config.trustProxy ? (_address: string, hop: number) => hop < 1 : false,
    // server.ts drains connections before close: nothing is ever answered 503 for closing.
    return503OnClosing: false,
    frameworkErrors,
    // Logged and counted like any answer (no hook runs for these): see answeredUnparsed below.
    clientErrorHandler: clientErrorHandler((request) => answeredUnparsed(request)),
    rewriteUrl: rewriteUndecodable,
    // Above any path Node accepts (its 16 KB header limit holds the request line), so a long id is
    // routed, goes through every hook and is the route's own 404, not a router error answered
    // before any hook (no security or rate-limit headers, no log line).
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    schemaController: { compilersFactory: { buildSerializer: buildLazySerializer } },
    // Node would answer an HTTP/1.1 request without Host itself, with a bare 400; the hook below
    // answers it in the envelope.
    ...(opts.https
      ? { https: { ...opts.https, minVersion: 'TLSv1.2' as const, requireHostHeader: false } }
      : { http: { requireHostHeader: false } }),
  }).withTypeProvider<TypeBoxTypeProvider>() as unknown as FastifyInstance;

  app.decorate('ctx', ctx);
  keepTlsParsersReading(app);
  boundPipelinedRequests(app);
  installResponseBatching(app);
  const validatorCompiler = createValidatorCompiler();
  app.setValidatorCompiler(((route) =>
    lazily(() => validatorCompiler(route) as Compiled)) as FastifySchemaCompiler<FastifySchema>);
  app.removeContentTypeParser('text/plain');
  installJsonBody(app);
  refuseUndeclaredInput(app, '/v1/');
  app.addSchema(ErrorBody);

  const notFound = installErrorHandling(app);
  // Before the Host and query checks, so that their refusals carry the CORS headers too.
  await installCors(app, config.corsOrigins, notFound);
  installHostAndExpect(app);
  installSecurityHeaders(app);
  if (config.trustProxy) installHttpsGuard(app);
  app.addHook('onClose', async () => ctx.rateLimiter.close());
  // One line per answered request. A callback hook: no promise per request just to write a log line.
  const writeRequestLine = requestLineWriter(ctx.logger);
  // Set once the metrics route is in (after the OpenAPI plugin, so the document lists it).
  let observe: ReturnType<typeof installMetrics> | undefined;
  answeredUnparsed = (request) => {
    observe?.observeUnparsed(request);
    writeRequestLine({ ...request, ms: 0 });
  };
  refuseConnect(app.server, answeredUnparsed);
  app.addHook('onResponse', (request, reply, done) => {
    observe?.observe(request, reply);
    writeRequestLine({
      requestId: request.id,
      method: request.method,
      // The URL as sent: an undecodable /v1 path is routed as /v1/- (rewriteUndecodable).
      url: request.routeOptions.url ?? request.originalUrl,
      status: reply.statusCode,
      ms: Math.round(reply.elapsedTime),
    });
    done();
  });

  await installOpenApi(app);
  await app.register(healthRoutes);
  observe = installMetrics(app);
  await app.register(
    async (v1) => {
      installAuth(v1);
      installRateLimit(v1);
      installScopeCheck(v1);
      installIdempotency(v1);
      // Unknown paths under /v1 go through the hooks above: a valid key is counted (decisions §8).
      v1.setNotFoundHandler(notFound);
      await v1.register(accountRoutes);
      await v1.register(dataRoutes);
      await v1.register(apiKeyRoutes);
      await v1.register(searchRoutes);
      await v1.register(userRoutes);
      await v1.register(webhookRoutes);
    },
    { prefix: '/v1' },
  );
  return app;
}
