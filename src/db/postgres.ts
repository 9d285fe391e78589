import { PostgresDialect } from 'kysely';
import pg from 'pg';

const TIMESTAMPTZ_OID = 1184;
const TIMESTAMP_OID = 1114;
const INT8_OID = 20;

/** Timestamps come back as the same ISO strings SQLite stores; counts as numbers. */
const types = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === TIMESTAMPTZ_OID || oid === TIMESTAMP_OID) return (v: string) => new Date(v).toISOString();
    if (oid === INT8_OID) return (v: string) => Number(v);
    // biome-ignore lint/suspicious/noExplicitAny: pg's overloads do not accept a union format.
    return pg.types.getTypeParser(oid, format as any);
  },
};

/** A pooled PostgreSQL dialect; `max` bounds connections per process. */
export function openPostgres(url: string, max = 10): { dialect: PostgresDialect; pool: pg.Pool } {
  const pool = new pg.Pool({ connectionString: url, max, types, idleTimeoutMillis: 30_000 });
  // An idle client's error (server restart) must not crash the process; the pool replaces it.
  pool.on('error', () => {});
  return { dialect: new PostgresDialect({ pool }), pool };
}
