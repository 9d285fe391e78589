import Ajv2020Module, { type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type { FastifyInstance } from 'fastify';

// biome-ignore lint/suspicious/noExplicitAny: the OpenAPI document is untyped JSON.
type Json = Record<string, any>;

/** One HTTP exchange as the harness saw it. */
export interface Exchange {
  method: string;
  url: string;
  status: number;
  headers: Record<string, string | string[] | number | undefined>;
  raw: string;
}

interface Operation {
  template: string;
  pattern: RegExp;
  params: number;
  methods: Map<string, Json>;
}

interface Contract {
  doc: Json;
  ajv: InstanceType<typeof Ajv2020Module.default>;
  operations: Operation[];
  validators: Map<string, ValidateFunction>;
}

// Routes the document deliberately leaves out (the document itself and its reference page).
const UNDOCUMENTED = [/^\/v1\/openapi\.json$/, /^\/docs(\/|$)/];
const pointer = (...parts: string[]) =>
  parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');

let contract: Contract | undefined;

function load(app: FastifyInstance): Contract {
  if (contract) return contract;
  // The routes are the same for every app the suite builds, so one compiled document serves them all.
  const doc = structuredClone(app.swagger()) as unknown as Json;
  const ajv = new Ajv2020Module.default({ strict: false, validateSchema: false, allErrors: true });
  addFormatsModule.default(ajv);
  ajv.addSchema(doc, 'openapi');
  const operations: Operation[] = Object.entries(doc.paths as Json).map(([template, item]) => {
    const escaped = template.replace(/[.*+?^$()|[\]\\]/g, '\\$&');
    const methods = new Map<string, Json>();
    for (const [method, op] of Object.entries(item as Json)) methods.set(method.toUpperCase(), op as Json);
    return {
      template,
      pattern: new RegExp(`^${escaped.replace(/\{[^}]+\}/g, '[^/]+')}$`),
      params: (template.match(/\{/g) ?? []).length,
      methods,
    };
  });
  // A literal segment wins over a parameter, as in the router.
  operations.sort((a, b) => a.params - b.params);
  contract = { doc, ajv, operations, validators: new Map() };
  return contract;
}

function validator(c: Contract, ref: string): ValidateFunction {
  let v = c.validators.get(ref);
  if (!v) {
    v = c.ajv.getSchema(`openapi#/${ref}`);
    if (!v) throw new Error(`contract: no schema at ${ref}`);
    c.validators.set(ref, v);
  }
  return v;
}

const headerValue = (h: Exchange['headers'], name: string) => {
  const v = h[name.toLowerCase()];
  return Array.isArray(v) ? v.join(', ') : v === undefined ? undefined : String(v);
};

function checkHeaders(c: Contract, response: Json, ex: Exchange, problems: string[]) {
  for (const [name, declared] of Object.entries((response.headers ?? {}) as Json)) {
    const h: Json = declared.$ref
      ? c.doc.components.headers[String(declared.$ref).split('/').pop()!]
      : declared;
    const value = headerValue(ex.headers, name);
    if (value === undefined) {
      if (h.required) problems.push(`header ${name} is required but missing`);
      continue;
    }
    const schema = h.schema ?? {};
    const typed = schema.type === 'integer' && /^-?[0-9]+$/.test(value) ? Number(value) : value;
    const v = c.ajv.compile(schema);
    if (!v(typed)) problems.push(`header ${name}: ${JSON.stringify(value)} ${c.ajv.errorsText(v.errors)}`);
  }
}

function checkBody(v: ValidateFunction, ex: Exchange, problems: string[]) {
  const type = headerValue(ex.headers, 'content-type') ?? '';
  if (!type.startsWith('application/json')) problems.push(`content-type is ${JSON.stringify(type)}`);
  let body: unknown;
  try {
    body = JSON.parse(ex.raw);
  } catch {
    problems.push('body is not JSON');
    return;
  }
  if (!v(body)) {
    for (const e of (v.errors ?? []).slice(0, 5)) {
      problems.push(
        `body${e.instancePath || ''} ${e.message}${e.params ? ` ${JSON.stringify(e.params)}` : ''}`,
      );
    }
  }
}

/** The path as the router matches it: percent escapes decoded, except an escaped `/`. */
function decodedPath(raw: string): string {
  try {
    return decodeURIComponent(raw.replace(/%2f/gi, '%252F'));
  } catch {
    return raw;
  }
}

/**
 * Throws when a response the suite received is not what the OpenAPI document promises for that
 * route, method and status: an unlisted status, a body failing its schema, a missing required
 * header. Responses of undocumented routes (404, 405) must still be the error envelope.
 */
export function assertContract(app: FastifyInstance, ex: Exchange): void {
  const c = load(app);
  const method = ex.method.toUpperCase();
  const path = decodedPath(ex.url.split('?')[0] ?? '/');
  if (UNDOCUMENTED.some((p) => p.test(path))) return;
  // The invitation email's page (docs/api.md, Members): HTML for people, not an operation.
  if ((method === 'GET' || method === 'HEAD') && path === '/v1/invitations/accept') return;
  // Its form's answers (the button's post, a refused form) are the page again.
  const type = String(headerValue(ex.headers, 'content-type') ?? '');
  if (method === 'POST' && path === '/v1/invitations/accept' && type.startsWith('text/html')) return;
  // A CORS preflight's answer (ADS_CORS_ORIGINS, src/http/cors.ts) is the browser's, not an operation.
  if (method === 'OPTIONS' && headerValue(ex.headers, 'access-control-allow-methods') !== undefined) return;
  const problems: string[] = [];
  if (!headerValue(ex.headers, 'x-request-id')) problems.push('X-Request-Id is missing');
  const found = c.operations.find((o) => o.pattern.test(path));
  const op = found?.methods.get(method === 'HEAD' ? 'GET' : method);
  let where = `${method} ${path} -> ${ex.status}`;
  if (!found || !op) {
    // No operation: unknown path (404) or known path, other method (405); still the error envelope.
    if (ex.status < 400) problems.push('a success from a route the document does not describe');
    else if (method !== 'HEAD') checkBody(validator(c, 'components/schemas/ErrorBody'), ex, problems);
  } else {
    where = `${method} ${found.template} -> ${ex.status}`;
    const response: Json | undefined = op.responses?.[String(ex.status)];
    if (!response) {
      problems.push(
        `status ${ex.status} is not in the document (it lists ${Object.keys(op.responses).join(', ')})`,
      );
    } else {
      checkHeaders(c, response, ex, problems);
      const media = response.content?.['application/json'];
      if (media && method !== 'HEAD') {
        const ref = pointer('paths', found.template, method.toLowerCase(), 'responses', String(ex.status));
        checkBody(validator(c, `${ref}/content/application~1json/schema`), ex, problems);
      } else if (!media && ex.status === 204 && ex.raw !== '') {
        problems.push('204 with a body');
      }
    }
  }
  if (problems.length > 0) {
    throw new Error(
      `Response does not match the OpenAPI document (${where}):\n  - ${problems.join('\n  - ')}\n` +
        `  body: ${ex.raw.slice(0, 500)}`,
    );
  }
}
