/**
 * Example values derived from the document's own schemas, so every operation shows a realistic
 * request and response without examples written (and left to rot) by hand. Values come from the
 * schema's `examples`/`default`/`enum` first, then from the property name, then from the type.
 */

type Schema = Record<string, unknown>;
export type ComponentSchemas = Record<string, Schema>;

const ULID = '01JD4Z5T8N3QK9W2V7R6M1B0XC';
const WHEN = '2026-11-22T02:42:16.123Z';
const MAX_DEPTH = 12;

/** Realistic values for the property names the API uses; anything else falls back to its type. */
const BY_NAME: Record<string, unknown> = {
  title: 'Quarterly report',
  content: 'Revenue grew 12% in the third quarter, driven by the new enterprise plan.',
  name: 'CI deploy key',
  email: 'ada@example.com',
  url: 'https://hooks.example.com/ads',
  secret: 'whsec-correct-horse-battery-staple',
  token: 'adsinv_7Q2vJ0x9Kc3mW8pL5rT1sB6nD4fH0gY2aE9uZ3cV8iO',
  key: 'ads_Jm9vQ2x8Kc3mW8pL5rT1sB6nD4fH0gY2aE9uZ3cV8iO',
  prefix: 'ads_Jm9vQ2x8',
  q: 'quarterly report -draft',
  excerpt: '… <em>quarterly</em> <em>report</em> for the finance team …',
  message: 'Human-readable explanation.',
  error: null,
  disabled_reason: null,
  next_attempt_at: null,
  updated_at: WHEN,
  event: 'data.created',
  status: 'active',
  total: 1,
  page: 1,
  pages: 1,
  limit: 20,
  score: 0.87,
  status_code: 200,
  duration_ms: 182,
  latency_ms: 182,
  used: 3,
  remaining: 57,
  requests_per_minute: 60,
  requests_per_day: 10000,
  from: '2026-01-01',
  filter: 'tag:finance',
  to: '2026-12-31',
};

/** Id fields whose prefix the name alone tells (decisions §1). */
const ID_BY_NAME: Record<string, string> = {
  request_id: 'req_',
  account_id: 'acc_',
  user_id: 'usr_',
  api_key_id: 'key_',
  event_id: 'evt_',
  webhook_id: 'wh_',
  delivery_id: 'whd_',
};

/** A bare `id` takes its prefix from the property or array that holds it. */
const ID_BY_PARENT: Record<string, string> = {
  api_key: 'key_',
  keys: 'key_',
  user: 'usr_',
  users: 'usr_',
  webhooks: 'wh_',
  deliveries: 'whd_',
  items: 'dat_',
  results: 'dat_',
};

const TAG_EXAMPLES = ['finance', 'q3'];
/** A member's scopes (decisions §3): what a member's first key and most keys carry. */
const MEMBER_SCOPES = ['read', 'write'];

interface Place {
  name?: string;
  parent?: string;
  depth: number;
}

function idFromPattern(pattern: unknown): string | undefined {
  const m = typeof pattern === 'string' ? /^\^([a-z]+_)\[0-9A-HJKMNP-TV-Z\]\{26\}\$$/.exec(pattern) : null;
  return m ? `${m[1]}${ULID}` : undefined;
}

function resolveRef(schema: Schema, components: ComponentSchemas): Schema {
  let current = schema;
  for (let i = 0; i < MAX_DEPTH && typeof current.$ref === 'string'; i++) {
    const name = current.$ref.replace('#/components/schemas/', '');
    const target = components[name];
    if (!target) throw new Error(`openapi examples: unresolved $ref ${current.$ref}`);
    current = target;
  }
  return current;
}

function typeOf(schema: Schema): string | undefined {
  const t = schema.type;
  if (Array.isArray(t)) return t.find((x) => x !== 'null') as string | undefined;
  return typeof t === 'string' ? t : undefined;
}

function sampleString(schema: Schema, { name, parent }: Place): string {
  const fromPattern = idFromPattern(schema.pattern);
  if (fromPattern) return fromPattern;
  if (schema.format === 'date-time') return WHEN;
  if (schema.format === 'email') return 'ada@example.com';
  if (name && ID_BY_NAME[name]) return `${ID_BY_NAME[name]}${ULID}`;
  if (name === 'id') return `${(parent && ID_BY_PARENT[parent]) || 'dat_'}${ULID}`;
  const named = name ? BY_NAME[name] : undefined;
  let value = typeof named === 'string' ? named : 'text';
  const min = typeof schema.minLength === 'number' ? schema.minLength : 0;
  const max = typeof schema.maxLength === 'number' ? schema.maxLength : Number.POSITIVE_INFINITY;
  if (value.length < min) value = value.padEnd(min, 'x');
  if (value.length > max) value = value.slice(0, max);
  return value;
}

function sampleNumber(schema: Schema, { name }: Place, integer: boolean): number {
  const named = name ? BY_NAME[name] : undefined;
  let value = typeof named === 'number' ? named : 1;
  if (integer) value = Math.round(value);
  if (typeof schema.minimum === 'number' && value < schema.minimum) value = schema.minimum;
  if (typeof schema.maximum === 'number' && value > schema.maximum) value = schema.maximum;
  if (typeof schema.exclusiveMinimum === 'number' && value <= schema.exclusiveMinimum) {
    value = schema.exclusiveMinimum + 1;
  }
  return value;
}

function sampleObject(schema: Schema, components: ComponentSchemas, at: Place): unknown {
  const out: Record<string, unknown> = {};
  const properties = (schema.properties ?? {}) as Record<string, Schema>;
  const child = (name: string): Place => ({ name, parent: at.name, depth: at.depth + 1 });
  for (const [key, sub] of Object.entries(properties)) out[key] = walk(sub, components, child(key));
  if (Object.keys(properties).length === 0 && typeof schema.additionalProperties === 'object') {
    out.department = walk(schema.additionalProperties as Schema, components, child('department'));
  }
  return out;
}

function sampleArray(schema: Schema, components: ComponentSchemas, at: Place) {
  if (schema.maxItems === 0) return [];
  if (at.name === 'tags') return TAG_EXAMPLES;
  if (at.name === 'scopes') return MEMBER_SCOPES;
  const itemName = at.name === 'events' ? 'event' : at.name === 'filter' ? 'filter' : undefined;
  const item = walk((schema.items ?? {}) as Schema, components, {
    name: itemName,
    parent: at.name,
    depth: at.depth + 1,
  });
  const count = Math.max(1, typeof schema.minItems === 'number' ? schema.minItems : 1);
  return Array.from({ length: count }, () => item);
}

/**
 * A value valid against `schema` (refs resolved in `components`), for the media type's `example`.
 * @example sample({ type: 'string', format: 'date-time' }, {}) // '2026-11-22T02:42:16.123Z'
 */
export function sample(schema: Schema, components: ComponentSchemas, name?: string): unknown {
  return walk(schema, components, { name, depth: 0 });
}

function walk(schema: Schema, components: ComponentSchemas, at: Place): unknown {
  if (at.depth > MAX_DEPTH) throw new Error('openapi examples: schema nests too deeply');
  const { name } = at;
  const s = resolveRef(schema, components);
  if (Array.isArray(s.examples) && s.examples.length > 0) return s.examples[0];
  if (s.example !== undefined) return s.example;
  if (s.const !== undefined) return s.const;
  if (Array.isArray(s.enum) && s.enum.length > 0) {
    return name && s.enum.includes(BY_NAME[name]) ? BY_NAME[name] : s.enum[0];
  }
  if (s.default !== undefined) return s.default;
  for (const key of ['anyOf', 'oneOf'] as const) {
    const branches = s[key] as Schema[] | undefined;
    if (branches?.length) {
      const preferNull = name !== undefined && BY_NAME[name] === null;
      const pick = branches.find((b) => (typeOf(b) === 'null') === preferNull) ?? branches[0]!;
      return walk(pick, components, { ...at, depth: at.depth + 1 });
    }
  }
  if (Array.isArray(s.allOf)) {
    const parts = (s.allOf as Schema[]).map((b) => walk(b, components, { ...at, depth: at.depth + 1 }));
    return Object.assign({}, ...parts);
  }
  switch (typeOf(s)) {
    case 'object':
      return sampleObject(s, components, at);
    case 'array':
      return sampleArray(s, components, at);
    case 'string':
      return sampleString(s, at);
    case 'integer':
      return sampleNumber(s, at, true);
    case 'number':
      return sampleNumber(s, at, false);
    case 'boolean':
      return true;
    case 'null':
      return null;
    default:
      return s.properties ? sampleObject(s, components, at) : null;
  }
}

// biome-ignore lint/suspicious/noExplicitAny: examples are free-form JSON.
type Example = any;

/**
 * What the schemas cannot tell about one operation's answer, applied to the example sampled from
 * them (`METHOD path status`): the examples must show what the service really answers there.
 */
const FACTS: Record<string, (example: Example) => void> = {
  // A new object has not changed yet (docs/api.md).
  'post /v1/data 201': (e) => {
    e.data.updated_at = null;
  },
  // Free plan windows: the usage limits are the plan's, not a page size.
  'get /v1/account 200': (e) => {
    Object.assign(e.data.usage.minute, { used: 3, limit: 60, remaining: 57 });
    Object.assign(e.data.usage.day, { used: 3, limit: 10000, remaining: 9997 });
  },
  // Only Redis counters can be degraded; one process's own never are.
  'get /readyz 200': (e) => {
    e.checks.rate_limiter = { backend: 'memory', degraded: false };
  },
  'get /readyz 503': (e) => {
    e.status = 'unavailable';
    e.checks.database = false;
    e.checks.rate_limiter = { backend: 'memory', degraded: false };
  },
};

/** Applies the known facts of `method path status` to its sampled example, in place. */
export function adjustExample(method: string, path: string, status: string, example: unknown): void {
  FACTS[`${method} ${path} ${status}`]?.(example);
}
