import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from 'fastify';
import type { AppContext } from './context.ts';
import { installAuth, installScopeCheck } from './http/auth.ts';
import { installErrorHandling } from './http/error-handler.ts';
import { healthRoutes } from './http/health.ts';
import { installHttpsGuard, installSecurityHeaders } from './http/https-guard.ts';
import { installIdempotency } from './http/idempotency.ts';
import { installOpenApi } from './http/openapi.ts';
import { installRateLimit } from './http/rate-limit.ts';
import { ErrorBody } from './http/schemas.ts';
import './http/types.ts';
import { createValidatorCompiler } from './http/validation.ts';
import { newId } from './lib/ids.ts';
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

/** Builds the HTTP app over an open, migrated database. Reads no environment, listens on nothing. */
export async function buildApp(ctx: AppContext, opts: BuildOptions = {}): Promise<FastifyInstance> {
  const { config } = ctx;
  const app = Fastify({
    loggerInstance: ctx.logger as FastifyBaseLogger,
    // One log line per response (below) instead of Fastify's two.
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'request_id' }),
    genReqId: () => newId('request'),
    requestIdHeader: false,
    bodyLimit: config.bodyLimit,
    // Trust exactly one hop: the proxy's own X-Forwarded-* entry, never what the client put before it.
    trustProxy: config.trustProxy ? (_address: string, hop: number) => hop < 1 : false,
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    routerOptions: { maxParamLength: 200 },
    ...(opts.https ? { https: { ...opts.https, minVersion: 'TLSv1.2' as const } } : {}),
  }).withTypeProvider<TypeBoxTypeProvider>() as unknown as FastifyInstance;

  app.decorate('ctx', ctx);
  app.setValidatorCompiler(createValidatorCompiler());
  app.removeContentTypeParser('text/plain');
  app.addSchema(ErrorBody);

  installErrorHandling(app);
  installSecurityHeaders(app);
  if (config.trustProxy) installHttpsGuard(app);
  app.addHook('onClose', async () => ctx.rateLimiter.close());
  app.addHook('onResponse', async (request, reply) => {
    request.log.info(
      {
        method: request.method,
        url: request.routeOptions.url ?? request.url,
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime),
      },
      'request',
    );
  });

  await installOpenApi(app);
  await app.register(healthRoutes);
  await app.register(
    async (v1) => {
      installAuth(v1);
      installRateLimit(v1);
      installScopeCheck(v1);
      installIdempotency(v1);
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
