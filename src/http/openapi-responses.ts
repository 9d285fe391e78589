import { ERROR_STATUS, type ErrorCode } from './errors.ts';
import { adjustExample, type ComponentSchemas, sample } from './openapi-examples.ts';
import { SCOPE_EXTENSION } from './openapi-routes.ts';
import { IDEMPOTENCY_KEY, RESPONSE_HEADERS } from './schemas.ts';

// biome-ignore lint/suspicious/noExplicitAny: the generated document is untyped JSON.
type Json = Record<string, any>;

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
const REQUEST_ID = 'req_01JD4Z5T8N3QK9W2V7R6M1B0XC';
const ERROR_REF = { $ref: '#/components/schemas/ErrorBody' };

const STATUS_TEXT: Record<string, string> = {
  200: 'OK',
  201: 'Created',
  202: 'Accepted',
  204: 'No Content',
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  409: 'Conflict',
  413: 'Content Too Large',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

const MESSAGES: Record<ErrorCode, string> = {
  invalid_request: 'The request is malformed.',
  invalid_json: 'The request body is not valid JSON.',
  invalid_content_type: 'Request bodies must be JSON: Content-Type: application/json.',
  invalid_query: 'Invalid query: unbalanced quotes at position 9.',
  invalid_filter: 'Invalid filter: unknown field colour.',
  invalid_token: 'The invitation token is unknown, used or expired.',
  unauthorized: 'A valid API key is required: Authorization: Bearer <key>.',
  forbidden: "This call needs the 'write' scope; the key has read.",
  https_required: 'HTTPS is required: this request did not arrive over HTTPS.',
  not_found: 'No such resource.',
  method_not_allowed: 'DELETE is not allowed on /v1/account; use GET.',
  email_taken: 'ada@example.com already belongs to a member of this account.',
  last_admin: "Cannot demote the account's last active admin.",
  idempotency_conflict: 'This Idempotency-Key was used with a different body.',
  payload_too_large: 'The request body is larger than the configured limit.',
  rate_limited: 'Rate limit exceeded for this API key (free plan, per minute).',
  internal_error: 'An unexpected error occurred.',
};

/** What an operation is, as far as the error codes it can answer with depend on it. */
interface Traits {
  method: string;
  path: string;
  authenticated: boolean;
  body: Set<string> | null;
  bodyRequired: Set<string>;
  query: Set<string>;
  pathParams: boolean;
  /** Every POST takes `Idempotency-Key` (decisions §9, src/http/idempotency.ts). */
  idempotent: boolean;
  /**
   * POST, PATCH, PUT and DELETE read whatever body arrives, even where the operation defines none:
   * it must be JSON and within the size limit (400, 413), and an operation without a body schema
   * refuses one with fields (400, src/http/validation.ts refuseUndeclaredInput).
   */
  readsBody: boolean;
}

/** Whether `code` can come out of this operation (decisions §2-§5); unknown codes default to yes. */
function applies(code: ErrorCode, t: Traits): boolean {
  switch (code) {
    case 'invalid_json':
    case 'invalid_content_type':
    case 'payload_too_large':
      return t.body !== null || t.readsBody;
    case 'invalid_query':
      return t.query.has('q');
    case 'invalid_filter':
      return t.query.has('filter');
    case 'invalid_token':
      return t.body?.has('token') ?? false;
    case 'forbidden':
      return t.authenticated;
    case 'email_taken':
      return t.body?.has('email') ?? false;
    case 'last_admin':
      return t.path.startsWith('/v1/users/{id}') && (t.method === 'patch' || t.method === 'delete');
    case 'idempotency_conflict':
      return t.idempotent;
    case 'method_not_allowed':
      return false;
    default:
      return true;
  }
}

function codesFor(status: number, t: Traits): ErrorCode[] {
  const all = (Object.keys(ERROR_STATUS) as ErrorCode[]).filter((c) => ERROR_STATUS[c] === status);
  const fitting = all.filter((c) => applies(c, t));
  return fitting.length > 0 ? fitting : all;
}

function errorExample(code: ErrorCode, t: Traits) {
  const error: Json = { code, message: MESSAGES[code], request_id: REQUEST_ID };
  if (code === 'invalid_request') {
    // Name a field the operation really has: its first body field, else `limit`, else none.
    const required = t.bodyRequired.values().next().value;
    const field = required ?? t.body?.values().next().value ?? (t.query.has('limit') ? 'limit' : undefined);
    const why = field === 'limit' ? 'must be <= 100' : required ? 'is required' : 'is invalid';
    if (field) {
      error.message = `Invalid ${t.body?.has(field) ? 'body' : 'query'}: ${field} ${why}.`;
      error.details = [{ field, message: why }];
    } else error.message = 'The request is malformed.';
  }
  return { error };
}

/** The statuses every operation of a kind can answer, whatever its route schema lists. */
function crossCutting(t: Traits, probe: boolean): number[] {
  // 400 for every operation: an HTTP/1.1 request without a Host header, or headers over 16 KB.
  // The health probes are open to plain HTTP behind a proxy, so they never answer 403.
  if (probe) return [400, 500];
  const statuses = [400, 403, 500];
  if (t.authenticated) statuses.push(401, 429);
  if (t.body !== null || t.readsBody) statuses.push(400, 413);
  // Under /v1 an unknown query parameter is a 400 whether or not the operation has any.
  if (t.query.size > 0 || t.path.startsWith('/v1/')) statuses.push(400);
  if (t.pathParams) statuses.push(404);
  if (t.idempotent) statuses.push(400, 409);
  return statuses;
}

function headersFor(status: number, t: Traits): Json {
  const ref = (name: string) => ({ $ref: `#/components/headers/${name}` });
  const headers: Json = { 'X-Request-Id': ref('X-Request-Id') };
  if (status === 401) headers['WWW-Authenticate'] = ref('WWW-Authenticate');
  else if (t.authenticated) {
    for (const name of ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset']) {
      headers[name] = ref(name);
    }
    headers['RateLimit-Policy'] = ref('RateLimit-Policy');
    headers.RateLimit = ref('RateLimit');
  }
  if (status === 429) headers['Retry-After'] = ref('Retry-After');
  // Replays are stored for successes and 4xx alike; a 5xx is never stored.
  if (t.idempotent && status < 500 && status !== 401 && status !== 429) {
    headers['Idempotent-Replayed'] = ref('Idempotent-Replayed');
  }
  return headers;
}

function traitsOf(method: string, path: string, op: Json, components: ComponentSchemas): Traits {
  const params: Json[] = op.parameters ?? [];
  let bodySchema: Json | undefined = op.requestBody?.content?.['application/json']?.schema;
  if (bodySchema?.$ref) bodySchema = components[String(bodySchema.$ref).split('/').pop() ?? ''];
  const authenticated = op[SCOPE_EXTENSION] !== undefined;
  return {
    method,
    path,
    authenticated,
    idempotent: method === 'post',
    readsBody: ['post', 'patch', 'put', 'delete'].includes(method),
    body: op.requestBody ? new Set(Object.keys(bodySchema?.properties ?? {})) : null,
    bodyRequired: new Set((bodySchema?.required ?? []) as string[]),
    query: new Set(params.filter((p) => p.in === 'query').map((p) => String(p.name))),
    pathParams: params.some((p) => p.in === 'path'),
  };
}

function describeParameters(op: Json, components: ComponentSchemas) {
  for (const p of op.parameters ?? []) {
    if (p.$ref) continue;
    const schema = p.schema ?? {};
    if (!p.description && Array.isArray(schema.enum)) {
      const dflt = schema.default === undefined ? '' : ` (default ${schema.default})`;
      p.description = `One of ${schema.enum.join(', ')}${dflt}.`;
    }
    if (!p.description && p.in === 'path') {
      const prefix = /^\^([a-z]+_)/.exec(String(schema.pattern ?? ''))?.[1];
      p.description = prefix ? `The id (\`${prefix}…\`); a malformed id is answered 404.` : 'The id.';
    }
    if (p.example === undefined && p.examples === undefined) p.example = sample(schema, components, p.name);
  }
}

function enrichResponses(op: Json, t: Traits, probe: boolean, components: ComponentSchemas) {
  const responses: Json = op.responses;
  for (const status of crossCutting(t, probe)) {
    responses[status] ??= { content: { 'application/json': { schema: ERROR_REF } } };
  }
  for (const [key, response] of Object.entries(responses)) {
    const status = Number(key);
    if (!response.description || response.description === 'Default Response') {
      const codes = status >= 400 ? codesFor(status, t) : [];
      const text = STATUS_TEXT[key] ?? 'Response';
      response.description = codes.length ? `${text}: ${codes.map((c) => `\`${c}\``).join(', ')}.` : text;
    }
    response.headers = { ...headersFor(status, t), ...response.headers };
    const media = response.content?.['application/json'];
    if (!media || media.example !== undefined || media.examples !== undefined) continue;
    if (status >= 400 && media.schema?.$ref === ERROR_REF.$ref) {
      media.examples = Object.fromEntries(
        codesFor(status, t).map((code) => [code, { summary: code, value: errorExample(code, t) }]),
      );
    } else {
      media.example = sample(media.schema, components);
      adjustExample(t.method, t.path, key, media.example);
    }
  }
  // Keep the statuses in numeric order so the reference reads top to bottom.
  op.responses = Object.fromEntries(Object.entries(responses).sort(([a], [b]) => a.localeCompare(b)));
}

/**
 * The document-wide step of generation (`transformObject`): response descriptions, the request id
 * and rate-limit headers, the error statuses every operation of a kind can answer, and examples.
 */
export function enrichOperations(doc: Json) {
  const components: ComponentSchemas = doc.components?.schemas ?? {};
  // Copies, so no two documents (one per app) share mutable objects.
  doc.components.headers = structuredClone(RESPONSE_HEADERS);
  doc.components.parameters = { 'Idempotency-Key': structuredClone(IDEMPOTENCY_KEY) };
  for (const [path, item] of Object.entries(doc.paths as Json)) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      const t = traitsOf(method, path, op, components);
      const probe = op.tags?.includes('Health') ?? false;
      if (t.idempotent)
        op.parameters = [...(op.parameters ?? []), { $ref: '#/components/parameters/Idempotency-Key' }];
      describeParameters(op, components);
      const body = op.requestBody?.content?.['application/json'];
      if (body && body.example === undefined) body.example = sample(body.schema, components);
      enrichResponses(op, t, probe, components);
    }
  }
}
