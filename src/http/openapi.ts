import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';

/**
 * The OpenAPI 3.1 document, generated from the route schemas (never written by hand), served at
 * `/v1/openapi.json`, and a browsable reference at `/docs`. Registered before any route.
 */
export async function installOpenApi(app: FastifyInstance) {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Account Data Service API',
        version: '1.0.0',
        description:
          'Account-scoped data objects with full-text search, members and invitations, webhooks, scoped API keys and per-plan rate limits.',
      },
      servers: [{ url: app.ctx.config.publicUrl }],
      components: {
        securitySchemes: {
          bearer: {
            type: 'http',
            scheme: 'bearer',
            description: 'An API key: `Authorization: Bearer ads_…`.',
          },
        },
      },
      security: [{ bearer: [] }],
    },
  });
  app.get('/v1/openapi.json', { schema: { hide: true } as never }, async () => app.swagger());
  await app.register(swaggerUi, { routePrefix: '/docs' });
}
