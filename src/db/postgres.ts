import { createHash } from 'node:crypto';
import { PostgresDialect } from 'kysely';
import type pg from 'pg';
import { pgDriver } from '../lib/optional-modules.ts';
import { isoString } from '../lib/time.ts';

const TIMESTAMPTZ_OID = 1184;
const TIMESTAMP_OID = 1114;
const INT8_OID = 20;

/** Timestamps come back as the same ISO strings SQLite stores; counts as numbers. */
const types = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === TIMESTAMPTZ_OID || oid === TIMESTAMP_OID) return (v: string) => isoString(Date.parse(v));
    if (oid === INT8_OID) return (v: string) => Number(v);
    // biome-ignore lint/suspicious/noExplicitAny: pg's overloads do not accept a union format.
    return pgDriver().types.getTypeParser(oid, format as any);
  },
};

/**
 * SQL starting with this marker (hotQuery in database.ts) runs as a named prepared statement on each
 * connection: parsed and planned once per connection instead of on every call. Such queries name
 * their columns, so a later migration adding columns cannot change a prepared result type.
 */
export const HOT_STATEMENT = '/* hot */ ';

const statementNames = new Map<string, string>();
const statementName = (text: string) => {
  let name = statementNames.get(text);
  if (!name) {
    name = `ads_${createHash('sha256').update(text).digest('hex').slice(0, 24)}`;
    statementNames.set(text, name);
  }
  return name;
};

type QueryFn = (...args: unknown[]) => unknown;

/** A pooled PostgreSQL dialect; `max` bounds connections per process. */
export function openPostgres(url: string, max = 10): { dialect: PostgresDialect; pool: pg.Pool } {
  // A connection that cannot be made in 10 s fails (the request answers 500, /readyz 503) rather
  // than waiting for ever on a database that does not answer.
  const pool = new (pgDriver().Pool)({
    connectionString: url,
    max,
    types,
    idleTimeoutMillis: 30_000,
    connectionTimeoutMillis: 10_000,
  });
  // An idle client's error (server restart) must not crash the process; the pool replaces it.
  pool.on('error', () => {});
  pool.on('connect', (client) => {
    const query = client.query.bind(client) as QueryFn;
    (client as unknown as { query: QueryFn }).query = (text, values, ...rest) =>
      typeof text === 'string' && text.startsWith(HOT_STATEMENT) && Array.isArray(values)
        ? query({ name: statementName(text), text, values }, ...rest)
        : query(text, values, ...rest);
  });
  return { dialect: new PostgresDialect({ pool }), pool };
}
