import { type TProperties, type TSchema, Type } from 'typebox';
import { ERROR_STATUS } from './errors.ts';

/** Strings from clients never hold NUL or lone surrogates: PostgreSQL refuses the first, and both would be altered silently. */
export const SAFE_TEXT = '^[^\\u0000\\uD800-\\uDFFF]*$';

/** A request string with the safe-text rule applied. */
export const Text = (
  opts: { minLength?: number; maxLength?: number; pattern?: string; description?: string } = {},
) => Type.String({ pattern: SAFE_TEXT, ...opts });

export const Timestamp = Type.String({ format: 'date-time', examples: ['2026-11-22T02:42:16.123Z'] });

const RequestId = Type.String({
  description: 'The request id, also sent as the X-Request-Id header.',
  examples: ['req_01JD4Z5T8N3QK9W2V7R6M1B0XC'],
});
const ResponseTime = Type.String({
  format: 'date-time',
  description: 'When the response was made (ISO 8601 UTC, milliseconds).',
  examples: ['2026-11-22T02:42:16.123Z'],
});

/** Counts of a collection page, in `data` and again in `meta` (decisions §2). */
const PageCounts = {
  total: Type.Integer({ minimum: 0, description: 'Items in the whole collection.' }),
  page: Type.Integer({ minimum: 1, description: 'This page, from 1.' }),
  pages: Type.Integer({ minimum: 0, description: 'ceil(total / limit); a page past it is empty.' }),
  limit: Type.Integer({ minimum: 1, description: 'Items per page.' }),
};

export const Meta = Type.Object({ request_id: RequestId, timestamp: ResponseTime });

export const PageMeta = Type.Object({ request_id: RequestId, timestamp: ResponseTime, ...PageCounts });

/** `{ data, meta }` around a single resource. */
export const Envelope = <T extends TSchema>(data: T) => Type.Object({ data, meta: Meta });

/** `{ data: { <name>: [...], total, page, pages, limit }, meta: {…, total, page, pages, limit} }`. */
export const CollectionEnvelope = <T extends TSchema>(name: string, item: T, extra: TProperties = {}) =>
  Type.Object({
    data: Type.Object({ [name]: Type.Array(item), ...PageCounts, ...extra }),
    meta: PageMeta,
  });

export const ErrorBody = Type.Object(
  {
    error: Type.Object({
      // A plain string with an enum: the serializer is unchanged, the document lists the closed set.
      code: Type.String({
        enum: Object.keys(ERROR_STATUS),
        description: 'Machine-readable reason from a closed set; the HTTP status follows from it.',
      }),
      message: Type.String({ description: 'For humans; may change between releases.' }),
      request_id: RequestId,
      details: Type.Optional(
        Type.Array(
          Type.Object({
            field: Type.String({
              description: 'The invalid field in dotted form, e.g. `title` or `tags.3`.',
            }),
            message: Type.String(),
          }),
          { description: 'One entry per invalid field (400 invalid_request).' },
        ),
      ),
    }),
  },
  { $id: 'ErrorBody' },
);

/** `page` and `limit` as decisions §2 defines them. */
export const PageQuery = {
  page: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: Number.MAX_SAFE_INTEGER,
      default: 1,
      description: 'Page number, from 1; a page past the last is empty.',
    }),
  ),
  limit: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 100, default: 20, description: 'Items per page, 1 to 100.' }),
  ),
};

/** A path id: anything that is not well formed is answered 404 like a missing resource. */
export const IdParam = (prefix: string) =>
  Type.Object({
    id: Type.String({
      pattern: `^${prefix}[0-9A-HJKMNP-TV-Z]{26}$`,
      description: `The id (\`${prefix}…\`); a malformed id is answered 404 like a missing one.`,
      examples: [`${prefix}01JD4Z5T8N3QK9W2V7R6M1B0XC`],
    }),
  });

/** The standard error responses every authenticated route can give. */
export const errorResponses = (...statuses: number[]) =>
  Object.fromEntries(statuses.map((s) => [s, Type.Ref('ErrorBody')]));

const header = (description: string, schema: TSchema, example: string | number, required = false) => ({
  description,
  required,
  schema,
  example,
});

/**
 * Response headers of decisions §2 and §8 as OpenAPI header objects (`components.headers`), shared
 * by every operation of the document. Values are those `src/ratelimit/headers.ts` writes.
 */
export const RESPONSE_HEADERS = {
  'X-Request-Id': header(
    "This request's id, equal to `request_id` in the body except on an idempotent replay (`Idempotent-Replayed: true`), whose body is the first request's. Quote it when reporting a problem.",
    Type.String({ pattern: '^req_[0-9A-HJKMNP-TV-Z]{26}$' }),
    'req_01JD4Z5T8N3QK9W2V7R6M1B0XC',
    true,
  ),
  'X-RateLimit-Limit': header(
    "Requests allowed per minute on the key's plan. Absent on unlimited plans.",
    Type.Integer({ minimum: 1 }),
    60,
  ),
  'X-RateLimit-Remaining': header(
    'Requests left in the current minute window.',
    Type.Integer({ minimum: 0 }),
    57,
  ),
  'X-RateLimit-Reset': header(
    'When the minute window resets, in seconds since the epoch.',
    Type.Integer({ minimum: 0 }),
    1795316580,
  ),
  'RateLimit-Policy': header(
    'IETF RateLimit-Policy: each window with its quota `q` and length `w` in seconds.',
    Type.String(),
    '"minute";q=60;w=60, "day";q=10000;w=86400',
  ),
  RateLimit: header(
    'IETF RateLimit: each window with its remaining requests `r` and seconds `t` until it resets.',
    Type.String(),
    '"minute";r=57;t=42, "day";r=9997;t=3042',
  ),
  'Retry-After': header(
    'Whole seconds (at least 1) until the exhausted window resets; retry after that.',
    Type.Integer({ minimum: 1 }),
    42,
    true,
  ),
  'WWW-Authenticate': header('The authentication scheme to use.', Type.String(), 'Bearer realm="ads"', true),
  'Idempotent-Replayed': header(
    'Present (`true`) when this is the stored response to an earlier request with the same Idempotency-Key.',
    Type.String({ enum: ['true'] }),
    'true',
  ),
};

/** The `Idempotency-Key` request header of every POST (decisions §9). */
export const IDEMPOTENCY_KEY = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  description:
    'Makes a retry safe: the same key with the same body within 24 h replays the first response ' +
    '(`Idempotent-Replayed: true`); with another body it is `409 idempotency_conflict`. Scoped to ' +
    "the API key that sends it (an invitation's acceptance: to its token); `400` and 5xx answers are not stored.",
  schema: Type.String({ pattern: '^[\\x21-\\x7e]{1,255}$' }),
  example: '3f1c2a9e-7b4d-4c11-9a55-0e8d2b6f4a10',
};
