import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { offsetOf, ok, okPage } from '../../http/envelope.ts';
import { toAppError } from '../../http/error-handler.ts';
import { AppError } from '../../http/errors.ts';
import { errorResponses } from '../../http/schemas.ts';
import { acceptedPage, acceptPage, PAGE_HEADERS, refusedPage } from './accept-page.ts';
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
  invitationKeyOwner,
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
      reply
        .code(201)
        .send(
          ok(
            request,
            await inviteMember(app.ctx, request.auth.accountId, request.body, request.idempotencyKey),
          ),
        ),
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
      ok(
        request,
        await resendInvitation(app.ctx, request.auth.accountId, request.params.id, request.idempotencyKey),
      ),
  );

  // Its own scope, so only these routes take a form body (the page's button), not the rest of /users.
  await app.register(acceptRoutes);
};

const FORM = 'application/x-www-form-urlencoded';
/** The largest body POST /invitations/accept reads, JSON or form (its token is at most 200 characters). */
const ACCEPT_BODY_LIMIT = 4096;

const fromPage = (request: FastifyRequest) =>
  request.method !== 'POST' || String(request.headers['content-type'] ?? '').startsWith(FORM);

/**
 * What a person gets when the page's own request fails before its handler (a token over 200
 * characters in the link, a form without the token or over 4 KB): the page again, saying so, not
 * the JSON envelope. API clients' JSON requests, and server errors, go to the app's handler.
 */
function pageErrors(err: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  const appErr = toAppError(err);
  if (!fromPage(request) || !appErr || appErr.status >= 500) throw err;
  // The link or form is what is wrong for these; anything else (HTTPS required, too many requests)
  // says what it is, with its headers (Retry-After).
  const message =
    appErr.code === 'payload_too_large'
      ? 'The form sent more than this page ever does.'
      : appErr.code === 'invalid_request' ||
          appErr.code === 'invalid_json' ||
          appErr.code === 'invalid_content_type'
        ? 'This invitation link is not valid. Open the link from your invitation email again.'
        : appErr.message;
  return reply
    .code(appErr.status)
    .headers({ ...appErr.headers, ...PAGE_HEADERS })
    .header('x-request-id', request.id)
    .send(refusedPage(message));
}

const acceptRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.addContentTypeParser(
    FORM,
    { parseAs: 'string', bodyLimit: ACCEPT_BODY_LIMIT },
    (_request, body, done) => {
      done(null, Object.fromEntries(new URLSearchParams(body as string)));
    },
  );

  // The invitation email's link (decisions §4: it ends `?token=`). A page, not an operation.
  app.get(
    '/invitations/accept',
    {
      schema: {
        hide: true,
        querystring: Type.Object({ token: Type.Optional(Type.String({ maxLength: 200 })) }),
      },
      errorHandler: pageErrors,
    } as never,
    async (request, reply) => {
      const { token } = request.query as { token?: string };
      // `accept`, relative: the same path without the query, also behind a proxy's path prefix.
      return reply.headers(PAGE_HEADERS).send(acceptPage(token ?? '', 'accept'));
    },
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
      // Anyone may call it, without a key or a rate limit: its body (a token of at most 200
      // characters) is refused above 4 KB, before it is read whole, not at ADS_BODY_LIMIT.
      bodyLimit: ACCEPT_BODY_LIMIT,
      config: {
        idempotencyOwner: (request) =>
          invitationKeyOwner(app.ctx, (request.body as { token?: unknown }).token),
      },
      errorHandler: pageErrors,
    },
    async (request, reply) => {
      if (!fromPage(request))
        return ok(request, await acceptInvitation(app.ctx, request.body.token, request.idempotencyKey));
      // An HTML answer instead of the envelope: the page is for a person, not a client.
      const html = reply.headers(PAGE_HEADERS) as unknown as FastifyReply;
      try {
        return html.send(
          acceptedPage(await acceptInvitation(app.ctx, request.body.token, request.idempotencyKey)),
        );
      } catch (err) {
        if (!(err instanceof AppError)) throw err;
        return html.code(err.status).send(refusedPage(err.message));
      }
    },
  );
};
