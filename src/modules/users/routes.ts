import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { offsetOf, ok, okPage } from '../../http/envelope.ts';
import { errorResponses } from '../../http/schemas.ts';
import {
  AcceptBody,
  AcceptedEnvelope,
  InviteBody,
  ListUsersQuery,
  RoleBody,
  UserEnvelope,
  UserIdParams,
  UserListEnvelope,
} from './schemas.ts';
import {
  acceptInvitation,
  changeRole,
  inviteMember,
  listMembers,
  removeMember,
  resendInvitation,
} from './service.ts';

const tags = ['Users'];

/** Members, invitations and their acceptance (decisions §4). */
export const userRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/users',
    {
      config: { scope: 'read' },
      schema: {
        tags,
        summary: 'List the members of the account',
        querystring: ListUsersQuery,
        response: { 200: UserListEnvelope, ...errorResponses(400, 401, 403, 429) },
      },
    },
    async (request) => {
      const { page = 1, limit = 20 } = request.query;
      const { users, total } = await listMembers(app.ctx, request.auth.accountId, {
        limit,
        offset: offsetOf({ page, limit }),
      });
      return okPage(request, 'users', users, total, { page, limit });
    },
  );

  app.post(
    '/users',
    {
      config: { scope: 'admin' },
      schema: {
        tags,
        summary: 'Invite a member (sends the invitation email)',
        body: InviteBody,
        response: { 201: UserEnvelope, ...errorResponses(400, 401, 403, 409, 429) },
      },
    },
    async (request, reply) =>
      reply.code(201).send(ok(request, await inviteMember(app.ctx, request.auth.accountId, request.body))),
  );

  app.patch(
    '/users/:id',
    {
      config: { scope: 'admin' },
      schema: {
        tags,
        summary: "Change a member's role",
        params: UserIdParams,
        body: RoleBody,
        response: { 200: UserEnvelope, ...errorResponses(400, 401, 403, 404, 409, 429) },
      },
    },
    async (request) =>
      ok(request, await changeRole(app.ctx, request.auth.accountId, request.params.id, request.body.role)),
  );

  app.delete(
    '/users/:id',
    {
      config: { scope: 'admin' },
      schema: {
        tags,
        summary: 'Remove a member or cancel an invitation (revokes their keys)',
        params: UserIdParams,
        response: {
          204: { type: 'null', description: 'Removed' },
          ...errorResponses(401, 403, 404, 409, 429),
        },
      },
    },
    async (request, reply) => {
      await removeMember(app.ctx, request.auth.accountId, request.params.id);
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/users/:id/invitation',
    {
      config: { scope: 'admin' },
      schema: {
        tags,
        summary: 'Send a still-invited member a fresh invitation (the old token stops working)',
        params: UserIdParams,
        response: { 200: UserEnvelope, ...errorResponses(400, 401, 403, 404, 429) },
      },
    },
    async (request) =>
      ok(request, await resendInvitation(app.ctx, request.auth.accountId, request.params.id)),
  );

  app.post(
    '/invitations/accept',
    {
      schema: {
        tags,
        summary: 'Accept an invitation (no API key): activates the member and returns their first key',
        security: [],
        body: AcceptBody,
        response: { 200: AcceptedEnvelope, ...errorResponses(400) },
      },
    },
    async (request) => ok(request, await acceptInvitation(app.ctx, request.body.token)),
  );
};
