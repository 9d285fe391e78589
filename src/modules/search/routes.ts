import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { okPage } from '../../http/envelope.ts';
import { errorResponses } from '../../http/schemas.ts';
import { SearchEnvelope, SearchQueryString } from './schemas.ts';
import { searchData } from './service.ts';

/** `GET /search` (decisions §6). */
export const searchRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/search',
    {
      config: { scope: 'read' },
      schema: {
        tags: ['Search'],
        summary: 'Search data objects',
        description:
          "Full-text search over the account's data objects; see docs/search.md for the query language.",
        querystring: SearchQueryString,
        response: { 200: SearchEnvelope, ...errorResponses(400, 401, 403, 429) },
      },
    },
    async (request) => {
      const { page = 1, limit = 20 } = request.query;
      const { results, total, incomplete } = await searchData(app.ctx, request.auth.accountId, {
        ...request.query,
        page,
        limit,
      });
      const body = okPage(request, 'results', results, total, { page, limit });
      return { ...body, data: { ...body.data, incomplete_results: incomplete } };
    },
  );
};
