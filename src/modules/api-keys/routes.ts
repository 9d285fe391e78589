import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { offsetOf, ok, okPage } from '../../http/envelope.ts';
import { errorResponses } from '../../http/schemas.ts';
import {
  ApiKeyEnvelope,
  ApiKeyIdParams,
  ApiKeyListEnvelope,
  CreateApiKeyBody,
  ListApiKeysQuery,
} from './schemas.ts';
import { createKey, deleteKey, listKeys } from './service.ts';

const tags = ['API keys'];

/** The caller's API keys (decisions §3). */
export const apiKeyRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/api-keys',
    {
      config: { scope: 'read' },
      schema: {
        tags,
        summary: "List the caller's API keys (an admin sees every key of the account)",
        querystring: ListApiKeysQuery,
        response: { 200: ApiKeyListEnvelope, ...errorResponses(400, 401, 403, 429) },
      },
    },
    async (request) => {
      const { page = 1, limit = 20 } = request.query;
      const { keys, total } = await listKeys(app.ctx, request.auth, {
        limit,
        offset: offsetOf({ page, limit }),
      });
      return okPage(request, 'keys', keys, total, { page, limit });
    },
  );

  app.post(
    '/api-keys',
    {
      config: { scope: 'any' },
      schema: {
        tags,
        summary: 'Create an API key for the caller',
        body: CreateApiKeyBody,
        response: { 201: ApiKeyEnvelope, ...errorResponses(400, 401, 403, 429) },
      },
    },
    async (request, reply) =>
      reply
        .code(201)
        .send(ok(request, await createKey(app.ctx, request.auth, request.body, request.idempotencyKey))),
  );

  app.delete(
    '/api-keys/:id',
    {
      config: { scope: 'any' },
      schema: {
        tags,
        summary: 'Revoke an API key',
        params: ApiKeyIdParams,
        response: { 204: { type: 'null', description: 'Revoked' }, ...errorResponses(401, 403, 404, 429) },
      },
    },
    async (request, reply) => {
      await deleteKey(app.ctx, request.auth, request.params.id);
      return reply.code(204).send(null);
    },
  );
};
