// Request generators driven by the OpenAPI document the app serves (issue 10, point 3): every
// operation, with valid parameters and bodies built from its schemas, and corrupted variants.
import fc from 'fast-check';
import type { FastifyInstance } from 'fastify';

// biome-ignore lint/suspicious/noExplicitAny: the OpenAPI document is untyped JSON.
export type Json = Record<string, any>;

export interface FuzzParam {
  name: string;
  in: 'path' | 'query' | 'header';
  required: boolean;
  schema: Json;
}

/** One operation of the document, as the generators need it. */
export interface FuzzOperation {
  method: string;
  template: string;
  /** `x-required-scope`; undefined for public operations. */
  scope: string | undefined;
  params: FuzzParam[];
  body: Json | null;
  responses: string[];
}

/** One request, ready for `app.inject` or a socket. */
export interface FuzzRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  payload?: string;
  /** The operation it was built from, `unknown` for invented paths. */
  op: string;
  /** Names of the corruptions applied; empty for a request that obeys the document. */
  corruptions: string[];
}

export function documentOf(app: FastifyInstance): Json {
  return structuredClone(app.swagger()) as unknown as Json;
}

function deref(doc: Json, node: Json): Json {
  let n = node;
  while (n && typeof n.$ref === 'string') {
    const parts = String(n.$ref).replace(/^#\//, '').split('/');
    n = parts.reduce((o: Json, p) => o?.[p.replace(/~1/g, '/').replace(/~0/g, '~')], doc);
  }
  return n;
}

/** Every operation of the document (HEAD aside: the generators add HEAD to GETs themselves). */
export function documentOperations(doc: Json): FuzzOperation[] {
  const out: FuzzOperation[] = [];
  for (const [template, item] of Object.entries(doc.paths as Json)) {
    for (const [method, raw] of Object.entries(item as Json)) {
      const op = raw as Json;
      const params = ((op.parameters ?? []) as Json[]).map((p) => {
        const d = deref(doc, p);
        return { name: d.name, in: d.in, required: Boolean(d.required), schema: deref(doc, d.schema ?? {}) };
      });
      const body = op.requestBody ? deref(doc, op.requestBody.content['application/json'].schema) : null;
      out.push({
        method: method.toUpperCase(),
        template,
        scope: op['x-required-scope'],
        params,
        body,
        responses: Object.keys(op.responses ?? {}),
      });
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Values from schemas

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const ID_PATTERN = /^\^([a-z]+_)\[0-9A-HJKMNP-TV-Z\]\{26\}\$$/;

/** The id prefix (`dat_`) a path parameter's schema pattern names, if any. */
export function idPrefix(schema: Json): string | undefined {
  return typeof schema.pattern === 'string' ? ID_PATTERN.exec(schema.pattern)?.[1] : undefined;
}

export const randomId = (prefix: string) =>
  fc
    .array(fc.constantFrom(...CROCKFORD), { minLength: 26, maxLength: 26 })
    .map((cs) => `${prefix}${cs.join('')}`);

/** Text without NUL or lone surrogates (what the document's generic pattern allows). */
const cleanText = (min: number, max: number) =>
  fc
    .oneof(
      fc.string({ minLength: min, maxLength: Math.min(max, 80) }),
      fc.string({ unit: 'grapheme', minLength: min, maxLength: Math.min(max, 30) }),
      fc.constantFrom('Crème brûlée', 'naïve café', '日本語のテキスト', 'emoji 😀 here', 'a  b\tc\nd'),
    )
    .map((s) => s.replaceAll('\u0000', ' '))
    .filter((s) => {
      const n = Array.from(s).length;
      return n >= min && n <= max && s.length <= 2 * max;
    });

export interface Hints {
  /** Values to prefer for a property or parameter of this name, mixed with schema-random ones. */
  [name: string]: fc.Arbitrary<unknown>;
}

/** An arbitrary of values valid for `schema`; `name` picks a semantic hint when there is one. */
export function fromSchema(
  doc: Json,
  raw: Json,
  hints: Hints,
  name?: string,
  depth = 0,
): fc.Arbitrary<unknown> {
  const schema = deref(doc, raw);
  const plain = fromSchemaPlain(doc, schema, hints, depth);
  const hint = name ? hints[name] : undefined;
  return hint ? fc.oneof({ weight: 4, arbitrary: hint }, { weight: 1, arbitrary: plain }) : plain;
}

function fromSchemaPlain(doc: Json, schema: Json, hints: Hints, depth: number): fc.Arbitrary<unknown> {
  const alts = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(alts))
    return fc.oneof(...alts.map((s: Json) => fromSchema(doc, s, hints, undefined, depth)));
  if (Array.isArray(schema.enum)) return fc.constantFrom(...schema.enum);
  if ('const' in schema) return fc.constant(schema.const);
  switch (schema.type) {
    case 'null':
      return fc.constant(null);
    case 'boolean':
      return fc.boolean();
    case 'integer':
      return fc.integer({ min: schema.minimum ?? -1_000_000, max: schema.maximum ?? 1_000_000 });
    case 'number':
      return fc.double({ min: schema.minimum ?? -1e6, max: schema.maximum ?? 1e6, noNaN: true });
    case 'string': {
      const prefix = idPrefix(schema);
      if (prefix) return randomId(prefix);
      if (schema.format === 'email') {
        return fc.emailAddress().filter((e) => e.length <= (schema.maxLength ?? 254));
      }
      if (schema.pattern === '^[\\x21-\\x7e]{1,255}$') {
        return fc.string({
          unit: fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c)),
          minLength: 1,
          maxLength: 64,
        });
      }
      return cleanText(schema.minLength ?? 0, schema.maxLength ?? 2000);
    }
    case 'array': {
      const items = fromSchema(doc, schema.items ?? {}, hints, undefined, depth + 1);
      const constraints = { minLength: schema.minItems ?? 0, maxLength: Math.min(schema.maxItems ?? 8, 8) };
      return schema.uniqueItems
        ? fc.uniqueArray(items, { ...constraints, selector: (v) => JSON.stringify(v) })
        : fc.array(items, constraints);
    }
    case 'object': {
      const props = (schema.properties ?? {}) as Json;
      const record = fc.record(
        Object.fromEntries(
          Object.entries(props).map(([k, s]) => [k, fromSchema(doc, s, hints, k, depth + 1)]),
        ),
        { requiredKeys: schema.required ?? [] },
      );
      const extra = schema.additionalProperties;
      if (!extra || typeof extra !== 'object') return record;
      const names = schema.propertyNames ?? {};
      const dict = fc.dictionary(
        cleanText(names.minLength ?? 1, names.maxLength ?? 64).filter((k) => k !== '__proto__'),
        fromSchema(doc, extra, hints, undefined, depth + 1),
        { maxKeys: Math.min(schema.maxProperties ?? 5, 5), noNullPrototype: true },
      );
      return fc.tuple(record, dict).map(([r, d]) => ({ ...d, ...(r as object) }));
    }
    default:
      return depth > 2 ? fc.constant(null) : fc.jsonValue({ maxDepth: 2 });
  }
}

const HUGE = 'h'.repeat(300_000);

/** A value that breaks `schema`: another type, out of range, too long, not in the enum, a bad character. */
export function violating(doc: Json, raw: Json): fc.Arbitrary<unknown> {
  const schema = deref(doc, raw);
  const wrongTypes: unknown[] = [null, true, 0, -1, 1.5, '', 'x', [], {}, ['x'], { a: 1 }];
  const out: fc.Arbitrary<unknown>[] = [
    fc.constantFrom(...wrongTypes.filter((v) => typeOf(v) !== schema.type)),
  ];
  if (Array.isArray(schema.enum))
    out.push(fc.constantFrom('nope', 'READ', ' document', `${schema.enum[0]} `));
  if (schema.type === 'integer') {
    out.push(
      fc.constantFrom((schema.minimum ?? 0) - 1, (schema.maximum ?? 1e9) + 1, 2 ** 53, -(2 ** 53), 1.5),
    );
  }
  if (schema.type === 'string') {
    const max = schema.maxLength ?? 1000;
    out.push(
      fc.constantFrom(
        'a\u0000b',
        '\ud800',
        'lone \udfff surrogate',
        'x'.repeat(max + 1),
        HUGE.slice(0, 100_000),
      ),
    );
    if ((schema.minLength ?? 0) > 0) out.push(fc.constant(''));
    if (idPrefix(schema)) out.push(fc.constantFrom('dat_', 'x'.repeat(26), 'usr_01JD4Z5T8N3QK9W2V7R6M1B0XC'));
  }
  if (schema.type === 'array') {
    out.push(
      fc.constant(Array.from({ length: (schema.maxItems ?? 50) + 1 }, (_, i) => `item-${i}`)),
      fc.array(fc.constantFrom(null, 1, {}, [], ''), { minLength: 1, maxLength: 3 }),
    );
    if ((schema.minItems ?? 0) > 0) out.push(fc.constant([]));
  }
  if (schema.type === 'object') {
    out.push(
      fc.constant(Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`k${i}`, 'v']))),
      fc.constant({ '': 'empty key' }),
      fc.constant({ k: 1 }),
      fc.constant(JSON.parse('{"__proto__": {"polluted": "yes"}}')),
    );
  }
  return fc.oneof(...out);
}

function typeOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

// ---------------------------------------------------------------------------------------------
// Requests

/** Ids the generators can aim at: existing (or once existing) resources, by id prefix. */
export class IdPool {
  private readonly byPrefix = new Map<string, string[]>();
  /** `whd_` ids with the `wh_` id they belong to. */
  readonly deliveries: Array<{ webhook: string; delivery: string }> = [];
  /**
   * Ids that generated requests read but never change or delete (the webhook the deliveries
   * belong to): a corrupted method aimed at one of them becomes PUT, which no route has.
   */
  readonly kept = new Set<string>();

  add(id: string) {
    const prefix = /^[a-z]+_/.exec(id)?.[0];
    if (!prefix) return;
    const list = this.byPrefix.get(prefix) ?? [];
    if (list.length < 500) list.push(id);
    this.byPrefix.set(prefix, list);
  }

  pick(prefix: string, n: number): string | undefined {
    const list = this.byPrefix.get(prefix);
    return list && list.length > 0 ? list[n % list.length] : undefined;
  }

  size(prefix: string) {
    return this.byPrefix.get(prefix)?.length ?? 0;
  }
}

/** Malformed path ids: wrong shape, wrong prefix, encodings, traversal, very long. */
export const badPathId = fc.oneof(
  fc.constantFrom(
    'x',
    '0',
    '-1',
    'null',
    'undefined',
    '%00',
    '%2F',
    '%2e%2e',
    '..',
    '%',
    '%ZZ',
    '%C3%28',
    '%F0%9F%98%80',
    'dat_',
    'DAT_01JD4Z5T8N3QK9W2V7R6M1B0XC',
    'dat_01JD4Z5T8N3QK9W2V7R6M1B0X',
    'dat_01JD4Z5T8N3QK9W2V7R6M1B0XCC',
    'dat_01JD4Z5T8N3QK9W2V7R6M1B0XI',
    "dat_01JD4Z5T8N3QK9W2V7R6M1B0XC'--",
    'dat_01JD4Z5T8N3QK9W2V7R6M1B0XC%20OR%201=1',
    'usr_01JD4Z5T8N3QK9W2V7R6M1B0XC',
    'key_01JD4Z5T8N3QK9W2V7R6M1B0XC',
    '__proto__',
    'constructor',
  ),
  fc.integer({ min: 27, max: 400 }).map((n) => `dat_${'A'.repeat(n)}`),
  fc.string({ minLength: 1, maxLength: 40 }).map(encodeURIComponent),
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 10 }).map(encodeURIComponent),
);

/** Who sends a request: a key, or what to put in Authorization. */
export interface Principals {
  [name: string]: string | null;
}

const ODD_TYPES = [
  'text/plain',
  'application/xml',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/jsonx',
  'application/json; charset=latin1',
  'application/vnd.api+json',
  'APPLICATION/JSON',
  '',
  '*/*',
  'application/json, text/plain',
];
const BAD_JSON = [
  '',
  '{',
  '}',
  '{"title":',
  "{'title': 'x'}",
  '{"title": "x",}',
  'NaN',
  'undefined',
  '\u0000',
  '{"a":1}{"b":2}',
  '[1,2',
  '"unterminated',
  '{"title": "\\ud800"}',
  '\ufeff{"title":"bom","type":"note"}',
  `${'['.repeat(5000)}${']'.repeat(5000)}`,
  `{"a":${'{"a":'.repeat(2000)}1${'}'.repeat(2001)}`,
  '{"__proto__": {"admin": true}, "title": "x", "type": "note"}',
  '{"constructor": {"prototype": {"x": 1}}}',
];
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];
const CHANGES = new Set(['POST', 'PATCH', 'DELETE']);

type Mutation =
  | { kind: 'body-wrong-type'; pick: number; value: unknown }
  | { kind: 'body-drop-required'; pick: number }
  | { kind: 'body-extra-prop'; name: string; value: unknown }
  | { kind: 'body-replace'; value: unknown }
  | { kind: 'body-bad-json'; raw: string }
  | { kind: 'body-huge'; pick: number }
  | { kind: 'content-type'; type: string }
  | { kind: 'no-body' }
  | { kind: 'body-on-bodyless'; raw: string; type: string }
  | { kind: 'query-wrong'; pick: number; value: string }
  | { kind: 'query-drop-required' }
  | { kind: 'query-unknown'; name: string; value: string }
  | { kind: 'query-repeat'; pick: number }
  | { kind: 'query-garbage'; raw: string }
  | { kind: 'path-bad'; pick: number; id: string }
  | { kind: 'path-shape'; variant: number }
  | { kind: 'auth'; value: string }
  | { kind: 'idempotency-key'; value: string }
  | { kind: 'method'; method: string };

const queryGarbage = fc.oneof(
  fc.constantFrom(
    '%',
    '%ZZ',
    '%C3%28',
    '%00',
    'page=%00',
    'limit=%FF',
    'q=%E0%A4%A',
    '&&&',
    '=',
    '==x',
    'page[]=1',
    'page[a]=1',
    'limit=1&limit=2',
    '__proto__=1',
    'constructor[prototype][x]=1',
    'a'.repeat(5000),
  ),
  fc.string({ unit: 'binary-ascii', maxLength: 60 }),
);

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant('body-wrong-type' as const), pick: fc.nat(), value: fc.constant(undefined) }),
  fc.record({ kind: fc.constant('body-drop-required' as const), pick: fc.nat() }),
  fc.record({
    kind: fc.constant('body-extra-prop' as const),
    name: fc.constantFrom('extra', 'id', 'account_id', 'created_at', 'role', 'admin', '__proto__', ''),
    value: fc.jsonValue({ maxDepth: 1 }),
  }),
  fc.record({
    kind: fc.constant('body-replace' as const),
    value: fc.oneof(fc.jsonValue({ maxDepth: 3 }), fc.constantFrom(null, [], 0, '', 'x', true)),
  }),
  fc.record({
    kind: fc.constant('body-bad-json' as const),
    raw: fc.oneof(fc.constantFrom(...BAD_JSON), fc.string({ maxLength: 30 })),
  }),
  fc.record({ kind: fc.constant('body-huge' as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant('content-type' as const), type: fc.constantFrom(...ODD_TYPES) }),
  fc.record({ kind: fc.constant('no-body' as const) }),
  fc.record({
    kind: fc.constant('body-on-bodyless' as const),
    raw: fc.constantFrom('{"title":"x"}', '{', 'plain text', ''),
    type: fc.constantFrom('application/json', 'text/plain', 'application/octet-stream'),
  }),
  fc.record({
    kind: fc.constant('query-wrong' as const),
    pick: fc.nat(),
    value: fc.oneof(
      fc.constantFrom(
        '',
        'abc',
        '0',
        '-1',
        '1.5',
        '1e3',
        '0x10',
        ' 5',
        '101',
        '1000000001',
        '99999999999999999999',
        'true',
        'null',
        '%00',
        '\u0000',
      ),
      fc.string({ maxLength: 20 }),
      fc.constant('q'.repeat(3000)),
    ),
  }),
  fc.record({ kind: fc.constant('query-drop-required' as const) }),
  fc.record({
    kind: fc.constant('query-unknown' as const),
    name: fc.constantFrom('foo', 'account_id', 'include', 'offset', 'per_page', 'fields', '__proto__', 'a.b'),
    value: fc.string({ maxLength: 10 }),
  }),
  fc.record({ kind: fc.constant('query-repeat' as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant('query-garbage' as const), raw: queryGarbage }),
  fc.record({ kind: fc.constant('path-bad' as const), pick: fc.nat(), id: badPathId }),
  fc.record({ kind: fc.constant('path-shape' as const), variant: fc.nat({ max: 7 }) }),
  fc.record({
    kind: fc.constant('auth' as const),
    value: fc.oneof(
      fc.constantFrom(
        '',
        'Bearer',
        'Bearer ',
        'Basic YWRtaW46YWRtaW4=',
        'Bearer ads_',
        'Bearer ads_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx',
        'bearer ads_not_a_real_key',
        'Bearer a b',
        'Bearer \u00e9',
        `Bearer ${'a'.repeat(5000)}`,
        'Token abc',
      ),
      fc.string({ unit: 'binary-ascii', maxLength: 40 }).map((s) => `Bearer ${s}`),
    ),
  }),
  fc.record({
    kind: fc.constant('idempotency-key' as const),
    value: fc.constantFrom('', ' ', 'k'.repeat(256), 'with space', 'tab\tkey', 'é', 'key-1'),
  }),
  fc.record({ kind: fc.constant('method' as const), method: fc.constantFrom(...METHODS) }),
);

export interface RequestBuilder {
  /** Valid (weight) or corrupted requests for `op`, sent as `principal`. */
  request(op: FuzzOperation): fc.Arbitrary<FuzzRequest>;
}

/**
 * Builds requests from `doc`. `principals` maps names to keys (null = no Authorization); the first is
 * the main caller and is used most. `pool` supplies ids of existing resources for path parameters.
 */
export function requestBuilder(
  doc: Json,
  hints: Hints,
  principals: Principals,
  pool: IdPool,
  opts: { corruptWeight?: number } = {},
): RequestBuilder {
  const names = Object.keys(principals);
  const principal = fc.oneof(
    { weight: 12, arbitrary: fc.constant(names[0]!) },
    ...names.slice(1).map((n) => ({ weight: 1, arbitrary: fc.constant(n) })),
  );

  const pathValue = (p: FuzzParam) => {
    const prefix = idPrefix(p.schema);
    const schemaRandom = fromSchema(doc, p.schema, hints);
    if (!prefix) return schemaRandom.map(String);
    return fc.oneof(
      {
        weight: 5,
        arbitrary: fc.nat().map((n) => pool.pick(prefix, n) ?? `${prefix}01JD4Z5T8N3QK9W2V7R6M1B0XC`),
      },
      { weight: 1, arbitrary: schemaRandom.map(String) },
    );
  };

  const request = (op: FuzzOperation): fc.Arbitrary<FuzzRequest> => {
    const pathParams = op.params.filter((p) => p.in === 'path');
    const queryParams = op.params.filter((p) => p.in === 'query');
    const headerParams = op.params.filter((p) => p.in === 'header');
    const pairParam = pathParams.find((p) => idPrefix(p.schema) === 'whd_');
    // Reads of a webhook (and its test ping, which changes nothing) also aim most ids at the
    // webhook that has deliveries: it stays out of the pool so that no generated DELETE or PATCH
    // disables it, and the webhooks generated POSTs create may all be gone again before such a read.
    const readsWebhook =
      (op.method === 'GET' || op.template.endsWith('/test')) &&
      !pairParam &&
      pathParams.some((p) => idPrefix(p.schema) === 'wh_');
    const path = fc.tuple(...pathParams.map(pathValue), fc.nat()).map((values) => {
      const out: Record<string, string> = {};
      pathParams.forEach((p, i) => {
        out[p.name] = values[i] as string;
      });
      // A delivery id only exists under its webhook: aim most pairs at real ones.
      const n = values[values.length - 1] as number;
      if (pairParam && pool.deliveries.length > 0 && n % 4 !== 0) {
        const pair = pool.deliveries[n % pool.deliveries.length]!;
        for (const p of pathParams) out[p.name] = idPrefix(p.schema) === 'wh_' ? pair.webhook : pair.delivery;
      } else if (readsWebhook && pool.deliveries.length > 0 && n % 4 !== 0) {
        const { webhook } = pool.deliveries[n % pool.deliveries.length]!;
        for (const p of pathParams) if (idPrefix(p.schema) === 'wh_') out[p.name] = webhook;
      }
      return out;
    });
    const query = fc.tuple(
      ...queryParams.map((p) =>
        fc.option(fromSchema(doc, p.schema, hints, p.name), {
          nil: undefined,
          freq: p.required ? 1_000_000 : 2,
        }),
      ),
    );
    const headers = fc.tuple(
      ...headerParams.map((p) =>
        fc.option(fromSchema(doc, p.schema, hints, p.name), { nil: undefined, freq: 3 }),
      ),
    );
    const body = op.body ? fromSchema(doc, op.body, hints) : fc.constant(undefined);
    const corrupt = opts.corruptWeight ?? 1;
    const mutations = fc.oneof(
      { weight: 1, arbitrary: fc.constant([] as Mutation[]) },
      { weight: corrupt, arbitrary: fc.array(mutation, { minLength: 1, maxLength: 3 }) },
    );
    return fc
      .record({ principal, path, query, headers, body, mutations, pick: fc.nat() })
      .chain((r) => {
        // A wrong-typed property value needs the schema of the property it lands on.
        const props = Object.entries((op.body?.properties ?? {}) as Json);
        const target = props.length > 0 ? props[r.pick % props.length] : undefined;
        return (
          target ? violating(doc, target[1]) : op.body ? violating(doc, op.body) : fc.constant(null)
        ).map((bad) => ({ ...r, bad, target: target?.[0] }));
      })
      .map((r) => assemble(op, r, principals, queryParams, headerParams, pool.kept));
  };
  return { request };
}

function assemble(
  op: FuzzOperation,
  r: {
    principal: string;
    path: Record<string, string>;
    query: unknown[];
    headers: unknown[];
    body: unknown;
    mutations: Mutation[];
    bad: unknown;
    target: string | undefined;
  },
  principals: Principals,
  queryParams: FuzzParam[],
  headerParams: FuzzParam[],
  kept: ReadonlySet<string>,
): FuzzRequest {
  let method = op.method;
  const corruptions: string[] = [];
  const pathValues = { ...r.path };
  const query: Array<[string, string]> = [];
  queryParams.forEach((p, i) => {
    const v = r.query[i];
    if (v === undefined) return;
    for (const item of Array.isArray(v) ? v : [v]) query.push([p.name, String(item)]);
  });
  let rawQuery = '';
  const headers: Record<string, string> = {};
  const key = principals[r.principal];
  if (key) headers.authorization = `Bearer ${key}`;
  headerParams.forEach((p, i) => {
    const v = r.headers[i];
    if (v !== undefined) headers[p.name.toLowerCase()] = String(v);
  });
  let body: unknown = r.body === undefined ? undefined : structuredClone(r.body);
  let payload: string | undefined;
  let rawPayload: string | undefined;
  let contentType: string | undefined = op.body ? 'application/json' : undefined;
  let pathShape = -1;

  for (const m of r.mutations) {
    corruptions.push(m.kind);
    const obj =
      body && typeof body === 'object' && !Array.isArray(body) ? (body as Record<string, unknown>) : null;
    switch (m.kind) {
      case 'body-wrong-type':
        // Copies: applied twice, the same value would otherwise end up inside itself.
        if (obj && r.target) obj[r.target] = structuredClone(r.bad);
        else if (op.body) body = structuredClone(r.bad);
        break;
      case 'body-drop-required': {
        const req = (op.body?.required ?? []) as string[];
        if (obj && req.length > 0) delete obj[req[m.pick % req.length]!];
        else body = {};
        break;
      }
      case 'body-extra-prop':
        if (obj)
          Object.defineProperty(obj, m.name, {
            value: m.value,
            enumerable: true,
            writable: true,
            configurable: true,
          });
        else body = { [m.name]: m.value };
        break;
      case 'body-replace':
        body = m.value;
        break;
      case 'body-bad-json':
        rawPayload = m.raw;
        contentType ??= 'application/json';
        break;
      case 'body-huge': {
        const props = Object.keys((op.body?.properties ?? {}) as Json);
        const name = props.length > 0 ? props[m.pick % props.length]! : 'huge';
        body = { ...(obj ?? {}), [name]: m.pick % 2 === 0 ? HUGE : HUGE.slice(0, 70_000) };
        break;
      }
      case 'content-type':
        contentType = m.type;
        break;
      case 'no-body':
        body = undefined;
        rawPayload = undefined;
        break;
      case 'body-on-bodyless':
        if (!op.body) {
          rawPayload = m.raw;
          contentType = m.type;
        }
        break;
      case 'query-wrong': {
        const all = queryParams.map((p) => p.name);
        if (all.length === 0) query.push(['page', m.value]);
        else {
          const name = all[m.pick % all.length]!;
          const kept = query.filter(([n]) => n !== name);
          query.length = 0;
          query.push(...kept, [name, m.value]);
        }
        break;
      }
      case 'query-drop-required': {
        const required = new Set(queryParams.filter((p) => p.required).map((p) => p.name));
        const kept = query.filter(([n]) => !required.has(n));
        query.length = 0;
        query.push(...kept);
        break;
      }
      case 'query-unknown':
        query.push([m.name, m.value]);
        break;
      case 'query-repeat': {
        const first = query[m.pick % Math.max(1, query.length)];
        if (first) query.push([first[0], first[1]]);
        else query.push(['limit', '5'], ['limit', '6']);
        break;
      }
      case 'query-garbage':
        rawQuery = m.raw;
        break;
      case 'path-bad': {
        const names = Object.keys(pathValues);
        if (names.length > 0) pathValues[names[m.pick % names.length]!] = m.id;
        else pathShape = m.pick % 8;
        break;
      }
      case 'path-shape':
        pathShape = m.variant;
        break;
      case 'auth':
        headers.authorization = m.value;
        break;
      case 'idempotency-key':
        headers['idempotency-key'] = m.value;
        break;
      case 'method':
        // GET /webhooks/{kept} turned into DELETE would delete the webhook every delivery read needs.
        method =
          CHANGES.has(m.method) && Object.values(pathValues).some((v) => kept.has(v)) ? 'PUT' : m.method;
        break;
    }
  }

  let path = op.template.replace(/\{(\w+)\}/g, (_, n: string) => pathValues[n] ?? 'missing');
  // Path shapes around the real one: trailing slash, doubled slashes, case, other prefixes, dot segments.
  switch (pathShape) {
    case 0:
      path = `${path}/`;
      break;
    case 1:
      path = path.replace('/v1/', '/v1//');
      break;
    case 2:
      path = path.toUpperCase();
      break;
    case 3:
      path = path.replace('/v1/', '/v2/');
      break;
    case 4:
      path = `${path}/extra`;
      break;
    case 5:
      path = path.replace('/v1/', '/v1/./');
      break;
    case 6:
      path = `${path}/..`;
      break;
    case 7:
      path = `/${path.split('/').slice(2).join('/')}`;
      break;
  }
  const qs = query.map(([n, v]) => `${encodeURIComponent(n)}=${encodeURIComponent(v)}`).join('&');
  const fullQuery = [qs, rawQuery].filter(Boolean).join('&');
  const url = fullQuery ? `${path}?${fullQuery}` : path;
  if (rawPayload !== undefined) payload = rawPayload;
  else if (body !== undefined) payload = JSON.stringify(body) ?? 'null';
  if (payload !== undefined && contentType !== undefined && contentType !== '')
    headers['content-type'] = contentType;
  else if (payload === undefined && contentType !== undefined && corruptions.includes('content-type')) {
    if (contentType !== '') headers['content-type'] = contentType;
  }
  return { method, url, headers, payload, op: `${op.method} ${op.template}`, corruptions };
}
