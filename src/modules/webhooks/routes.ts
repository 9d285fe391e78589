import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Agent } from 'undici';
import { createDeliveryDispatcher } from '../../events/dispatcher.ts';
import { offsetOf, ok, okPage } from '../../http/envelope.ts';
import { errorResponses } from '../../http/schemas.ts';
import { pingWebhook, retryDelivery } from './actions.ts';
import {
  CreateWebhookBody,
  DeliveryEnvelope,
  DeliveryListEnvelope,
  DeliveryParams,
  ListDeliveriesQuery,
  ListWebhooksQuery,
  PatchWebhookBody,
  TestResultEnvelope,
  WebhookEnvelope,
  WebhookIdParams,
  WebhookListEnvelope,
} from './schemas.ts';
import {
  createWebhook,
  getWebhook,
  listAccountWebhooks,
  listWebhookDeliveries,
  patchWebhook,
  removeWebhook,
} from './service.ts';

const tags = ['Webhooks'];

/** `/webhooks`, their deliveries, manual retries and test pings (decisions §7). */
export const webhookRoutes: FastifyPluginAsyncTypebox = async (app) => {
  // Created on the first test ping, so building the app reads no CA file and opens no sockets.
  let dispatcher: Agent | undefined;
  const pingDispatcher = () => {
    dispatcher ??= createDeliveryDispatcher(app.ctx.config);
    return dispatcher;
  };
  app.addHook('onClose', async () => dispatcher?.close());

  app.post(
    '/webhooks',
    {
      config: { scope: 'write' },
      schema: {
        tags,
        summary: 'Register a webhook',
        body: CreateWebhookBody,
        response: { 201: WebhookEnvelope, ...errorResponses(400, 401, 403, 413, 429) },
      },
    },
    async (request, reply) =>
      reply
        .code(201)
        .send(
          ok(
            request,
            await createWebhook(app.ctx, request.auth.accountId, request.body, request.idempotencyKey),
          ),
        ),
  );

  app.get(
    '/webhooks',
    {
      config: { scope: 'read' },
      schema: {
        tags,
        summary: 'List webhooks, newest first',
        querystring: ListWebhooksQuery,
        response: { 200: WebhookListEnvelope, ...errorResponses(400, 401, 403, 429) },
      },
    },
    async (request) => {
      const { page = 1, limit = 20 } = request.query;
      const { webhooks, total } = await listAccountWebhooks(app.ctx, request.auth.accountId, {
        limit,
        offset: offsetOf({ page, limit }),
      });
      return okPage(request, 'webhooks', webhooks, total, { page, limit });
    },
  );

  app.get(
    '/webhooks/:id',
    {
      config: { scope: 'read' },
      schema: {
        tags,
        summary: 'Get a webhook',
        params: WebhookIdParams,
        response: { 200: WebhookEnvelope, ...errorResponses(401, 403, 404, 429) },
      },
    },
    async (request) => ok(request, await getWebhook(app.ctx, request.auth.accountId, request.params.id)),
  );

  app.patch(
    '/webhooks/:id',
    {
      config: { scope: 'write' },
      schema: {
        tags,
        summary: 'Change url, events or secret, or re-enable with status "active"',
        params: WebhookIdParams,
        body: PatchWebhookBody,
        response: { 200: WebhookEnvelope, ...errorResponses(400, 401, 403, 404, 413, 429) },
      },
    },
    async (request) =>
      ok(request, await patchWebhook(app.ctx, request.auth.accountId, request.params.id, request.body)),
  );

  app.delete(
    '/webhooks/:id',
    {
      config: { scope: 'write' },
      schema: {
        tags,
        summary: 'Delete a webhook and cancel its pending deliveries',
        params: WebhookIdParams,
        response: { 204: { type: 'null', description: 'Deleted' }, ...errorResponses(401, 403, 404, 429) },
      },
    },
    async (request, reply) => {
      await removeWebhook(app.ctx, request.auth.accountId, request.params.id);
      return reply.code(204).send(null);
    },
  );

  app.get(
    '/webhooks/:id/deliveries',
    {
      config: { scope: 'read' },
      schema: {
        tags,
        summary: "List a webhook's deliveries with their attempts, newest first",
        params: WebhookIdParams,
        querystring: ListDeliveriesQuery,
        response: { 200: DeliveryListEnvelope, ...errorResponses(400, 401, 403, 404, 429) },
      },
    },
    async (request) => {
      const { page = 1, limit = 20, status } = request.query;
      const { deliveries, total } = await listWebhookDeliveries(
        app.ctx,
        request.auth.accountId,
        request.params.id,
        { status, limit, offset: offsetOf({ page, limit }) },
      );
      return okPage(request, 'deliveries', deliveries, total, { page, limit });
    },
  );

  app.post(
    '/webhooks/:id/deliveries/:delivery_id/retry',
    {
      config: { scope: 'write' },
      schema: {
        tags,
        summary: 'Send a delivery again now (202: queued; the attempt shows in the delivery log)',
        params: DeliveryParams,
        response: { 202: DeliveryEnvelope, ...errorResponses(400, 401, 403, 404, 429) },
      },
    },
    async (request, reply) => {
      const { id, delivery_id } = request.params;
      const delivery = await retryDelivery(app.ctx, request.auth.accountId, id, delivery_id);
      return reply.code(202).send(ok(request, delivery));
    },
  );

  app.post(
    '/webhooks/:id/test',
    {
      config: { scope: 'write' },
      schema: {
        tags,
        summary: 'Send a signed webhook.test event now and report the status code and latency',
        params: WebhookIdParams,
        response: { 200: TestResultEnvelope, ...errorResponses(401, 403, 404, 429) },
      },
    },
    async (request) =>
      ok(request, await pingWebhook(app.ctx, pingDispatcher(), request.auth.accountId, request.params.id)),
  );
};
