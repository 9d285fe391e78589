import { type TSchema, Type } from 'typebox';

/** Strings from clients never hold NUL or lone surrogates: PostgreSQL refuses the first, and both would be altered silently. */
export const SAFE_TEXT = '^[^\\u0000\\uD800-\\uDFFF]*$';

/** A request string with the safe-text rule applied. */
export const Text = (
  opts: { minLength?: number; maxLength?: number; pattern?: string; description?: string } = {},
) => Type.String({ pattern: SAFE_TEXT, ...opts });

export const Timestamp = Type.String({ format: 'date-time', examples: ['2026-11-22T02:42:16.123Z'] });

export const Meta = Type.Object({
  request_id: Type.String({ examples: ['req_01JD4Z5T8N3QK9W2V7R6M1B0XC'] }),
  timestamp: Timestamp,
});

export const PageMeta = Type.Object({
  request_id: Type.String(),
  timestamp: Timestamp,
  total: Type.Integer({ minimum: 0 }),
  page: Type.Integer({ minimum: 1 }),
  pages: Type.Integer({ minimum: 0 }),
  limit: Type.Integer({ minimum: 1 }),
});

/** `{ data, meta }` around a single resource. */
export const Envelope = <T extends TSchema>(data: T) => Type.Object({ data, meta: Meta });

/** `{ data: { <name>: [...], total, page, pages, limit }, meta: {…, total, page, pages, limit} }`. */
export const CollectionEnvelope = <T extends TSchema>(name: string, item: T) =>
  Type.Object({
    data: Type.Object({
      [name]: Type.Array(item),
      total: Type.Integer({ minimum: 0 }),
      page: Type.Integer({ minimum: 1 }),
      pages: Type.Integer({ minimum: 0 }),
      limit: Type.Integer({ minimum: 1 }),
    }),
    meta: PageMeta,
  });

export const ErrorBody = Type.Object(
  {
    error: Type.Object({
      code: Type.String(),
      message: Type.String(),
      request_id: Type.String(),
      details: Type.Optional(Type.Array(Type.Object({ field: Type.String(), message: Type.String() }))),
    }),
  },
  { $id: 'ErrorBody' },
);

/** `page` and `limit` as decisions §2 defines them. */
export const PageQuery = {
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000_000, default: 1 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
};

/** A path id: anything that is not well formed is answered 404 like a missing resource. */
export const IdParam = (prefix: string) =>
  Type.Object({ id: Type.String({ pattern: `^${prefix}[0-9A-HJKMNP-TV-Z]{26}$` }) });

/** The standard error responses every authenticated route can give. */
export const errorResponses = (...statuses: number[]) =>
  Object.fromEntries(statuses.map((s) => [s, Type.Ref('ErrorBody')]));
