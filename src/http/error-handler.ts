import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, type ErrorCode } from './errors.ts';
import { toDetails } from './validation.ts';

/** Renders any error as the envelope of decisions §2; a 5xx never shows internals. */
export function sendError(request: FastifyRequest, reply: FastifyReply, err: AppError) {
  if (err.headers) reply.headers(err.headers);
  const error: Record<string, unknown> = { code: err.code, message: err.message, request_id: request.id };
  if (err.details?.length) error.details = err.details;
  return reply.code(err.status).type('application/json; charset=utf-8').send({ error });
}

const FASTIFY_CODES: Record<string, [ErrorCode, string]> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: [
    'invalid_content_type',
    'Request bodies must be JSON: Content-Type: application/json.',
  ],
  FST_ERR_CTP_EMPTY_JSON_BODY: [
    'invalid_json',
    'The request body is empty but Content-Type is application/json.',
  ],
  FST_ERR_CTP_INVALID_JSON_BODY: ['invalid_json', 'The request body is not valid JSON.'],
  FST_ERR_CTP_BODY_TOO_LARGE: ['payload_too_large', 'The request body is larger than the configured limit.'],
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: ['invalid_request', 'Content-Length does not match the body.'],
};

/** Maps a thrown error (ours, Fastify's or unexpected) to an AppError. */
export function toAppError(err: FastifyError | AppError | Error): AppError | null {
  if (err instanceof AppError) return err;
  const fe = err as FastifyError & { validationContext?: string };
  if (fe.validation) {
    // A malformed id in a path is answered like a missing resource (decisions §1).
    if (fe.validationContext === 'params') return new AppError('not_found', 'No such resource.');
    const part = fe.validationContext === 'querystring' ? 'query' : (fe.validationContext ?? 'body');
    const details = toDetails(fe.validation as never, part);
    const first = details[0];
    const message = first
      ? `Invalid ${part}: ${first.field} ${first.message}${details.length > 1 ? ` (and ${details.length - 1} more)` : ''}.`
      : `Invalid ${part}.`;
    return new AppError('invalid_request', message, { details });
  }
  const mapped = fe.code ? FASTIFY_CODES[fe.code] : undefined;
  if (mapped) return new AppError(mapped[0], mapped[1]);
  // secure-json-parse rejects __proto__ / constructor.prototype keys with a SyntaxError.
  if (err instanceof SyntaxError || (fe.statusCode === 400 && /prototype|JSON/i.test(fe.message))) {
    return new AppError('invalid_json', 'The request body is not valid JSON.');
  }
  if (fe.statusCode && fe.statusCode >= 400 && fe.statusCode < 500) {
    return new AppError('invalid_request', 'The request is malformed.');
  }
  return null;
}

interface RouteShape {
  method: string;
  pattern: RegExp;
}

/** Installs the error handler and the 404/405 handler for unknown routes. */
export function installErrorHandling(app: FastifyInstance) {
  const routes: RouteShape[] = [];
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const pattern = new RegExp(
      `^${route.url.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/:[A-Za-z_]+/g, '[^/]+')}/?$`,
    );
    for (const method of methods) routes.push({ method, pattern });
  });

  app.setErrorHandler((err: FastifyError, request, reply) => {
    const appErr = toAppError(err);
    if (appErr) return sendError(request, reply, appErr);
    request.log.error({ err }, 'unhandled error');
    return sendError(request, reply, new AppError('internal_error', 'An unexpected error occurred.'));
  });

  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0] ?? '/';
    const allowed = [...new Set(routes.filter((r) => r.pattern.test(path)).map((r) => r.method))];
    if (allowed.length > 0) {
      reply.header('allow', allowed.join(', '));
      return sendError(
        request,
        reply,
        new AppError(
          'method_not_allowed',
          `${request.method} is not allowed on ${path}; use ${allowed.join(', ')}.`,
        ),
      );
    }
    return sendError(request, reply, new AppError('not_found', `No route ${request.method} ${path}.`));
  });
}
