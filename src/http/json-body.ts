import type { FastifyInstance } from 'fastify';
import { AppError } from './errors.ts';

/** Deepest nesting of arrays and objects a request body may have; no API body needs more than a few. */
export const MAX_JSON_DEPTH = 64;
/**
 * Most members one array or object of a request body may have. No field takes more than 50 (tags,
 * metadata); validating a body of hundreds of thousands of unknown fields or items, each an error
 * of its own, held the event loop for seconds (a 9 MB body: 3-4 s).
 */
export const MAX_JSON_MEMBERS = 1000;

/**
 * What is wrong with the shape of `text`, by one pass over the characters (strings skipped):
 * arrays/objects nested deeper than `limits.depth`, or one with more than `limits.members`
 * members. Run before JSON.parse, so no later step (validation, the idempotency fingerprint)
 * recurses through a hostile body thousands of levels deep or walks a million members.
 */
export function jsonShapeProblem(
  text: string,
  limits: { depth: number; members: number } = { depth: MAX_JSON_DEPTH, members: MAX_JSON_MEMBERS },
): 'depth' | 'members' | null {
  // commas[d]: separators seen so far in the open container at depth d (members = commas + 1).
  const commas: number[] = [];
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      // A backslash escapes the next character; a quote ends the string.
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x2c) {
      if (depth > 0 && ++commas[depth - 1]! >= limits.members) return 'members';
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > limits.depth) return 'depth';
      commas[depth - 1] = 0;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return null;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** The `charset` parameter of a Content-Type, lower-cased, or null without one. */
function charsetOf(contentType: string | undefined): string | null {
  const m = /;\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(contentType ?? '');
  return m ? (m[1] ?? '').toLowerCase() : null;
}

/**
 * Fastify's own JSON parser (secure-json-parse, refusing `__proto__` and `constructor.prototype`
 * keys, with a message that names them, as the body is valid JSON) behind two checks: the body is
 * UTF-8 (RFC 8259), strictly (a byte that is not would otherwise become U+FFFD and be stored
 * changed), and its depth is bounded: `400 invalid_json`. A charset other than UTF-8, or any
 * Content-Encoding but identity, is `400 invalid_content_type`. An empty body on an operation that
 * takes none is no body.
 */
export function installJsonBody(app: FastifyInstance) {
  // Any other media type: refused (decisions §1), unless there is no body and the operation takes
  // none. A client that labels every request with its session's Content-Type (a form type, say)
  // sends that on a DELETE or a test ping with no body too, which docs/api.md says is fine. The
  // body, if any, is refused unread, as Fastify refused an unknown type.
  app.addContentTypeParser('*', (request, payload, done) => {
    const { headers } = request;
    const refuse = () =>
      done(
        new AppError('invalid_content_type', 'Request bodies must be JSON: Content-Type: application/json.'),
        undefined,
      );
    if (request.routeOptions.schema?.body !== undefined) return refuse();
    if (headers['transfer-encoding'] === undefined) {
      if (headers['content-length'] === undefined || headers['content-length'] === '0') done(null, undefined);
      else refuse();
      return;
    }
    // Chunked: empty only once it has ended; its first byte refuses it.
    let settled = false;
    const settle = (empty: boolean) => {
      if (settled) return;
      settled = true;
      payload.removeListener('data', onData);
      if (empty) done(null, undefined);
      else refuse();
    };
    const onData = (chunk: Buffer) => {
      if (chunk.length > 0) settle(false);
    };
    payload.on('data', onData);
    payload.once('end', () => settle(true));
    payload.once('error', () => settle(false));
  });
  const parse = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, raw, done) => {
    // A compressed body would otherwise be read as its compressed bytes: "not valid UTF-8", or
    // worse, a body labelled compressed that is not would be taken as it is.
    const encoding = request.headers['content-encoding']?.trim().toLowerCase();
    if (encoding !== undefined && encoding !== '' && encoding !== 'identity') {
      const message = `Content-Encoding ${JSON.stringify(encoding.slice(0, 40))} is not supported; send the JSON body uncompressed.`;
      done(new AppError('invalid_content_type', message), undefined);
      return;
    }
    const charset = charsetOf(request.headers['content-type']);
    if (charset !== null && charset !== 'utf-8' && charset !== 'utf8') {
      done(
        new AppError(
          'invalid_content_type',
          `JSON bodies must be UTF-8; charset=${charset} is not supported.`,
        ),
        undefined,
      );
      return;
    }
    let body: string;
    try {
      body = utf8.decode(raw as Buffer);
    } catch {
      done(new AppError('invalid_json', 'The request body is not valid UTF-8.'), undefined);
      return;
    }
    // An operation that takes no body takes none labelled JSON too: clients that send
    // `Content-Type: application/json` on every request (a session default) send it on a DELETE.
    if (body.length === 0 && request.routeOptions.schema?.body === undefined) {
      done(null, undefined);
      return;
    }
    const problem = jsonShapeProblem(body);
    if (problem === 'depth') {
      done(
        new AppError('invalid_json', `The request body nests deeper than ${MAX_JSON_DEPTH} levels.`),
        undefined,
      );
      return;
    }
    if (problem === 'members') {
      const message = `The request body has an array or object of more than ${MAX_JSON_MEMBERS} members; no field takes that many.`;
      done(new AppError('invalid_request', message), undefined);
      return;
    }
    parse(request, body, (err, value) => {
      if (err === null || !isJson(body)) return done(err, value);
      // Valid JSON that secure-json-parse refused: a key that could reach an object's prototype.
      done(
        new AppError(
          'invalid_json',
          'The request body has a "__proto__" key, or a "constructor" object with a "prototype" key; those key names are refused.',
        ),
        undefined,
      );
    });
  });
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}
