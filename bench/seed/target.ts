/**
 * Throwaway databases for benchmarks: a temporary data directory (SQLite file, TLS files) and, for
 * PostgreSQL, a fresh `ads_bench_<random>` database created through an admin connection and dropped
 * at the end.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';

export type BenchDialect = 'sqlite' | 'postgres';

/** Where a benchmark's server and seeder find their data; `drop()` removes all of it. */
export interface BenchTarget {
  dialect: BenchDialect;
  dataDir: string;
  /** Value for ADS_DATABASE_URL: a `postgres://` URL or the SQLite file path. */
  databaseUrl: string;
  drop(): Promise<void>;
}

/** The admin connection used to create and drop benchmark databases on PostgreSQL. */
export function defaultPostgresUrl(): string {
  return process.env.ADS_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
}

/** Creates an empty target; for PostgreSQL the database name is random and dropped by `drop()`. */
export async function createTarget(
  dialect: BenchDialect,
  adminUrl = defaultPostgresUrl(),
): Promise<BenchTarget> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ads-bench-'));
  const removeDir = () => fs.rmSync(dataDir, { recursive: true, force: true });
  if (dialect === 'sqlite') {
    return {
      dialect,
      dataDir,
      databaseUrl: path.join(dataDir, 'ads.sqlite'),
      drop: async () => removeDir(),
    };
  }
  const name = `ads_bench_${randomBytes(5).toString('hex')}`;
  await adminQuery(adminUrl, `CREATE DATABASE ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    dialect,
    dataDir,
    databaseUrl: url.toString(),
    drop: async () => {
      removeDir();
      await adminQuery(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    },
  };
}

async function adminQuery(adminUrl: string, text: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}
