import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { enrichOperations } from './openapi-responses.ts';
import { transformRoute } from './openapi-routes.ts';
import { webhooksSection } from './openapi-webhooks.ts';

const DESCRIPTION = `Account-scoped data objects with full-text search, members and invitations, webhooks, scoped API keys and per-plan rate limits.

Every success is \`{ "data": …, "meta": { "request_id", "timestamp" } }\`; collections add \`total\`, \`page\`, \`pages\` and \`limit\`. Every error is \`{ "error": { "code", "message", "request_id", "details?" } }\`, and every response carries \`X-Request-Id\`.

Behind a TLS-terminating proxy (\`ADS_TRUST_PROXY\`), a request that did not arrive over HTTPS is refused with \`403 https_required\`.`;

const TAGS = [
  { name: 'Account', description: "The caller's account, its plan, limits and the calling key's usage." },
  { name: 'API keys', description: 'Keys of the caller: shown once at creation, revocable, scoped.' },
  { name: 'Data objects', description: 'The documents, notes and records of the account.' },
  { name: 'Search', description: 'Full-text search over data objects, with a small query language.' },
  { name: 'Users', description: 'Members of the account, their roles and invitations.' },
  { name: 'Webhooks', description: 'Event subscriptions, their delivery log, retries and test pings.' },
  {
    name: 'Webhook events',
    description: 'What the service POSTs to your webhook URLs (the `webhooks` section).',
  },
  { name: 'Health', description: 'Probes for load balancers and orchestrators; no API key.' },
];

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
        description: DESCRIPTION,
        license: { name: 'MIT', identifier: 'MIT' },
      },
      servers: [
        {
          // Read when the document is served: with ADS_PORT=0 the server fills in its port after
          // listening (src/server.ts).
          get url() {
            return app.ctx.config.publicUrl;
          },
          description: 'This instance (ADS_PUBLIC_URL)',
        },
      ],
      tags: TAGS,
      components: {
        securitySchemes: {
          bearer: {
            type: 'http',
            scheme: 'bearer',
            description:
              'An API key: `Authorization: Bearer ads_…`. Scopes `read`, `write` and `admin`, capped by the ' +
              "user's role (member: read, write; admin: all three). Each operation names the scope it needs " +
              'in its security requirement and in `x-required-scope`.',
          },
        },
      },
      security: [{ bearer: [] }],
    },
    // Shared schemas keep their $id as component name: `#/components/schemas/ErrorBody`, not def-0.
    refResolver: {
      buildLocalReference: (json, _base, _fragment, i) =>
        typeof json.$id === 'string' ? json.$id : `def-${i}`,
    },
    transform: transformRoute as never,
    transformObject: (documentObject) => {
      const doc = (documentObject as { openapiObject: Record<string, unknown> }).openapiObject;
      enrichOperations(doc);
      doc.webhooks = webhooksSection();
      return doc;
    },
  });
  app.get('/v1/openapi.json', { schema: { hide: true } as never }, async () => app.swagger());
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    // The page where a user pastes an API key ("Authorize") must not be framed by another site
    // (clickjacking), as the invitation page is not.
    uiHooks: {
      onRequest: (_request, reply, done) => {
        reply.header('content-security-policy', "frame-ancestors 'none'").header('x-frame-options', 'DENY');
        done();
      },
    },
  });
}
