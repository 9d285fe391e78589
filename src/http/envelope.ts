import type { FastifyReply, FastifyRequest } from 'fastify';
import { isoNow } from '../lib/time.ts';

const metaOf = (request: FastifyRequest) => ({
  request_id: request.id,
  timestamp: isoNow(request.server.ctx.clock),
});

/** `{ data, meta }` for one resource. */
export function ok<T>(request: FastifyRequest, data: T) {
  return { data, meta: metaOf(request) };
}

/**
 * Sends `{ data, meta }` for one resource the database has already serialised (SQLite's JSON
 * functions). `meta` holds two strings, which JSON.stringify writes as the response serializer does.
 */
export function sendOkJson(reply: FastifyReply, request: FastifyRequest, dataJson: string) {
  return reply
    .type('application/json; charset=utf-8')
    .send(`{"data":${dataJson},"meta":${JSON.stringify(metaOf(request))}}`);
}

export interface PageRequest {
  page: number;
  limit: number;
}

/**
 * Offset of a page request. Any page a client can send (up to 2^53 - 1) is valid and past the end
 * of every collection; the offset is kept an exact integer so that the databases take it.
 */
export const offsetOf = (p: PageRequest) => Math.min((p.page - 1) * p.limit, Number.MAX_SAFE_INTEGER);

/** A collection envelope: the array under its name plus the counts, in `data` and in `meta`. */
export function okPage<T>(request: FastifyRequest, name: string, items: T[], total: number, p: PageRequest) {
  const counts = { total, page: p.page, pages: Math.ceil(total / p.limit), limit: p.limit };
  return {
    data: { [name]: items, ...counts },
    meta: { ...metaOf(request), ...counts },
  };
}

/**
 * Sends a collection envelope whose items arrive already serialised as a JSON array (SQLite's JSON
 * functions build a list page in one statement). The envelope goes through the route's response
 * serializer with an empty array, and the array takes its place: the first member of `data`.
 */
export function sendPageJson(
  reply: FastifyReply,
  request: FastifyRequest,
  name: string,
  itemsJson: string,
  total: number,
  p: PageRequest,
) {
  const head = `{"data":{${JSON.stringify(name)}:`;
  // The response schemas serialise to strings (fast-json-stringify).
  const body = reply.serialize(okPage(request, name, [], total, p)) as string;
  if (!body.startsWith(`${head}[]`)) throw new Error(`a ${name} page does not start with ${head}[]`);
  return reply
    .type('application/json; charset=utf-8')
    .send(`${head}${itemsJson}${body.slice(head.length + 2)}`);
}
