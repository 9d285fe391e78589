import type { FastifyInstance } from 'fastify';
import { AppError } from './errors.ts';

/** Deepest nesting of arrays and objects a request body may have; no API body needs more than a few. */
export const MAX_JSON_DEPTH = 64;

/**
 * Whether `text` nests arrays/objects deeper than `limit`, by one pass over the characters (strings
 * skipped). Run before JSON.parse, so no later step (validation, the idempotency fingerprint) ever
 * recurses through a hostile body thousands of levels deep.
 */
export function jsonDepthExceeds(text: string, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      // A backslash escapes the next character; a quote ends the string.
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > limit) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

/**
 * Fastify's own JSON parser (secure-json-parse, refusing `__proto__` and `constructor.prototype`
 * keys) behind the depth bound: deeper bodies are `400 invalid_json`.
 */
export function installJsonBody(app: FastifyInstance) {
  const parse = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (jsonDepthExceeds(body as string, MAX_JSON_DEPTH)) {
      done(
        new AppError('invalid_json', `The request body nests deeper than ${MAX_JSON_DEPTH} levels.`),
        undefined,
      );
      return;
    }
    parse(request, body as string, done);
  });
}
