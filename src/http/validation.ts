import Ajv, { type ErrorObject } from 'ajv';
import addFormats from 'ajv-formats';
import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  FastifySchema,
  FastifySchemaCompiler,
  HookHandlerDoneFunction,
} from 'fastify';
import { isEmail } from '../lib/email.ts';
import { AppError, type ErrorDetail } from './errors.ts';

function makeAjv(coerce: boolean) {
  const ajv = new Ajv.default({
    allErrors: true,
    strict: false,
    coerceTypes: coerce ? 'array' : false,
    useDefaults: true,
    removeAdditional: false,
    unicodeRegExp: true,
  });
  addFormats.default(ajv);
  // RFC 5321's part limits too (src/lib/email.ts), which ajv-formats' pattern does not hold.
  ajv.addFormat('email', isEmail);
  return ajv;
}

/**
 * Bodies are validated exactly as sent (`{"title": 1}` is an error, not "1"); query strings and
 * path parameters arrive as text and are coerced to the schema's types.
 */
export function createValidatorCompiler(): FastifySchemaCompiler<FastifySchema> {
  const strict = makeAjv(false);
  const coercing = makeAjv(true);
  return ({ schema, httpPart }) => {
    if (httpPart === 'body') return strict.compile(schema as object);
    const validate = coercing.compile(schema as object);
    const integers = httpPart === 'querystring' ? integerProperties(schema) : [];
    if (integers.length === 0) return validate;
    // Ajv coerces anything Number() accepts ("1e1", "0x10", " 5"); decisions §2 wants plain digits.
    const strictIntegers = (data: Record<string, unknown>) => {
      for (const name of integers) {
        const raw = data?.[name];
        const values = Array.isArray(raw) ? raw : [raw];
        if (values.some((v) => typeof v === 'string' && !/^-?[0-9]+$/.test(v))) {
          strictIntegers.errors = [
            {
              instancePath: `/${name}`,
              schemaPath: '#/type',
              keyword: 'type',
              params: { type: 'integer' },
              message: 'must be an integer written in decimal digits',
            },
          ];
          return false;
        }
      }
      const valid = validate(data);
      strictIntegers.errors = validate.errors;
      return valid;
    };
    strictIntegers.errors = null as ErrorObject[] | null | undefined;
    return strictIntegers;
  };
}

function integerProperties(schema: unknown): string[] {
  const props = (schema as { properties?: Record<string, { type?: unknown }> }).properties ?? {};
  return Object.entries(props)
    .filter(([, s]) => s.type === 'integer')
    .map(([name]) => name);
}

const MAX_DETAILS = 20;

/** Ajv errors as `{field, message}` pairs, field in dotted form (`tags.3`, `metadata.key`). */
export function toDetails(errors: ErrorObject[], part: string): ErrorDetail[] {
  const details: ErrorDetail[] = [];
  for (const e of errors) {
    if (e.keyword === 'if') continue;
    const segments = e.instancePath.split('/').slice(1).map(unescapePointer);
    const params = e.params as Record<string, unknown>;
    if (e.keyword === 'required') segments.push(String(params.missingProperty));
    if (e.keyword === 'additionalProperties') segments.push(String(params.additionalProperty));
    const field = segments.join('.') || part;
    let message = e.message ?? 'is invalid';
    if (e.keyword === 'additionalProperties') message = 'is not a known field';
    else if (e.keyword === 'required') message = 'is required';
    else if (e.keyword === 'pattern' && String(params.pattern).includes('u0000')) {
      message = 'must not contain NUL characters or unpaired surrogates';
    } else if (e.keyword === 'pattern' && String(params.pattern) === '\\S') message = 'must not be blank';
    else if (e.keyword === 'enum')
      message = `must be one of ${(params.allowedValues as unknown[]).join(', ')}`;
    if (!details.some((d) => d.field === field && d.message === message)) details.push({ field, message });
    if (details.length >= MAX_DETAILS) break;
  }
  return details;
}

function unescapePointer(s: string) {
  return s.replace(/~1/g, '/').replace(/~0/g, '~');
}

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

const unknownFields = (fields: string[]): ErrorDetail[] =>
  fields.slice(0, MAX_DETAILS).map((field) => ({ field, message: 'is not a known field' }));

const more = (n: number) => (n > 1 ? ` (and ${n - 1} more)` : '');

/**
 * An API route that declares no query schema (`GET /data/{id}`) refuses any parameter, as the
 * others do: `DELETE /data/{id}?soft=true` must not quietly delete for good.
 */
function refuseQuery(request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction) {
  const fields = Object.keys(request.query as object);
  if (fields.length === 0) return done();
  // `/v1/data/?page=2` (a trailing slash) reaches `/data/:id` with an empty id: the path is what
  // is wrong, and the params check answers 404, not a 400 calling a known parameter unknown.
  if (Object.values((request.params ?? {}) as Record<string, unknown>).some((v) => v === '')) return done();
  const message = `Invalid query: ${fields[0]} is not a known field${more(fields.length)}.`;
  done(new AppError('invalid_request', message, { details: unknownFields(fields) }));
}

/**
 * A route that declares no body (`DELETE /users/{id}`, `POST /users/{id}/invitation`) refuses one
 * with fields, as decisions §1 refuses unknown fields: `{"role":"admin"}` sent with a re-send
 * would otherwise be ignored while the caller believes it applied. No body, `null` or `{}` is fine.
 */
function refuseBody(request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction) {
  const body = request.body;
  if (body === undefined || body === null) return done();
  const isObject = typeof body === 'object' && !Array.isArray(body);
  const fields = isObject ? Object.keys(body) : [];
  if (isObject && fields.length === 0) return done();
  const message = isObject
    ? `Invalid body: ${fields[0]} is not a known field${more(fields.length)}; ${request.method} on this path takes no body.`
    : `Invalid body: ${request.method} on this path takes no body.`;
  const details = isObject ? unknownFields(fields) : [{ field: 'body', message: 'must be empty' }];
  done(new AppError('invalid_request', message, { details }));
}

/**
 * Operations under `prefix` that declare no query schema, or (for a body method) no body schema,
 * refuse what they would otherwise ignore (decisions §1: unknown fields are a 400).
 */
export function refuseUndeclaredInput(app: FastifyInstance, prefix: string) {
  app.addHook('onRoute', (route) => {
    // Hidden routes (the OpenAPI document itself) are files, not operations: `?v=2` may bust a cache.
    if (!route.url.startsWith(prefix) || (route.schema as { hide?: boolean } | undefined)?.hide) return;
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const added = [
      ...(route.schema?.querystring ? [] : [refuseQuery]),
      ...(route.schema?.body || !methods.some((m) => BODY_METHODS.has(m)) ? [] : [refuseBody]),
    ];
    if (added.length === 0) return;
    const existing = route.preValidation;
    route.preValidation = [...(existing ? [existing].flat() : []), ...added];
  });
}
