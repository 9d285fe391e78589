import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { offsetOf, ok, okPage, sendOkJson, sendPageJson } from '../../http/envelope.ts';
import { errorResponses } from '../../http/schemas.ts';
import {
  CreateDataBody,
  DataEnvelope,
  DataIdParams,
  DataListEnvelope,
  ListDataQuery,
  PatchDataBody,
} from './schemas.ts';
import { createData, deleteData, getData, listData, patchData } from './service.ts';

const tags = ['Data objects'];

/** `/data` and `/items/{id}` (decisions §5). */
export const dataRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/data',
    {
      config: { scope: 'read' },
      schema: {
        tags,
        summary: 'List data objects',
        querystring: ListDataQuery,
        response: { 200: DataListEnvelope, ...errorResponses(400, 401, 403, 429) },
      },
    },
    async (request, reply) => {
      const { page = 1, limit = 20, sort = 'date', order } = request.query;
      const { items, total } = await listData(app.ctx, request.auth.accountId, {
        sort,
        order,
        limit,
        offset: offsetOf({ page, limit }),
      });
      if ('json' in items) return sendPageJson(reply, request, 'items', items.json, total, { page, limit });
      return okPage(request, 'items', items, total, { page, limit });
    },
  );

  app.post(
    '/data',
    {
      config: { scope: 'write' },
      schema: {
        tags,
        summary: 'Create a data object',
        body: CreateDataBody,
        response: { 201: DataEnvelope, ...errorResponses(400, 401, 403, 409, 413, 429) },
      },
    },
    async (request, reply) => {
      const created = await createData(app.ctx, request.auth.accountId, request.body, request.idempotencyKey);
      return reply.code(201).send(ok(request, created));
    },
  );

  for (const path of ['/data/:id', '/items/:id']) {
    app.get(
      path,
      {
        config: { scope: 'read' },
        schema: {
          tags,
          summary: path.startsWith('/items')
            ? 'Get a data object (alias of GET /data/{id})'
            : 'Get a data object',
          params: DataIdParams,
          response: { 200: DataEnvelope, ...errorResponses(401, 403, 404, 429) },
        },
      },
      async (request, reply) => {
        const object = await getData(app.ctx, request.auth.accountId, request.params.id);
        return 'json' in object ? sendOkJson(reply, request, object.json) : ok(request, object);
      },
    );
  }

  app.patch(
    '/data/:id',
    {
      config: { scope: 'write' },
      schema: {
        tags,
        summary: 'Update a data object',
        params: DataIdParams,
        body: PatchDataBody,
        response: { 200: DataEnvelope, ...errorResponses(400, 401, 403, 404, 413, 429) },
      },
    },
    async (request) =>
      ok(request, await patchData(app.ctx, request.auth.accountId, request.params.id, request.body)),
  );

  app.delete(
    '/data/:id',
    {
      config: { scope: 'write' },
      schema: {
        tags,
        summary: 'Delete a data object permanently',
        params: DataIdParams,
        response: { 204: { type: 'null', description: 'Deleted' }, ...errorResponses(401, 403, 404, 429) },
      },
    },
    async (request, reply) => {
      await deleteData(app.ctx, request.auth.accountId, request.params.id);
      return reply.code(204).send(null);
    },
  );
};
