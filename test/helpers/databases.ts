import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type Kysely, sql } from 'kysely';
import pg from 'pg';
import type { DatabaseConfig } from '../../src/config.ts';

export type TestDialect = 'sqlite' | 'postgres';

const PG_VAR = 'ADS_TEST_POSTGRES_URL';

/** Why the PostgreSQL suites are skipped, or false when they run. In CI they must run. */
export function postgresSkipReason(): string | false {
  if (process.env[PG_VAR]) return false;
  if (process.env.CI === 'true') {
    throw new Error(`CI=true but ${PG_VAR} is not set: the PostgreSQL suite must run in CI.`);
  }
  return `PostgreSQL suite skipped: set ${PG_VAR}=postgres://postgres@127.0.0.1:5432/postgres to run it`;
}

/** A fresh, empty database of the given dialect, and how to throw it away. */
export async function createTestDatabase(
  dialect: TestDialect,
  opts: { icuLocale?: string } = {},
): Promise<{ config: DatabaseConfig; dataDir: string; drop(): Promise<void> }> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ads-test-'));
  if (dialect === 'sqlite') {
    return {
      config: { dialect: 'sqlite', file: path.join(dataDir, 'ads.sqlite') },
      dataDir,
      drop: async () => fs.rmSync(dataDir, { recursive: true, force: true }),
    };
  }
  const adminUrl = process.env[PG_VAR];
  if (!adminUrl) throw new Error(`${PG_VAR} is not set`);
  const name = `ads_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    // The test server's databases use C.UTF-8 (code point order); a deployment's often sort by a
    // language's rules (ICU), which a suite can ask for to prove the order does not depend on it.
    const locale = opts.icuLocale
      ? ` TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE '${opts.icuLocale.replace(/[^A-Za-z0-9-]/g, '')}' LOCALE 'C.UTF-8'`
      : '';
    await admin.query(`CREATE DATABASE ${name}${locale}`);
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    config: { dialect: 'postgres', url: url.toString() },
    dataDir,
    drop: async () => {
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      try {
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await c.end();
      }
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * Runs a SQLite migration's `up` once more over a database it already migrated (a replay after a
 * crash) and checks that it changed no schema (`schema_version` counts every change, a dropped or
 * created index included) and left the file intact.
 */
export async function assertSqliteReplayChangesNothing(
  db: Kysely<unknown>,
  up: (db: Kysely<unknown>, dialect: 'sqlite') => Promise<void>,
): Promise<void> {
  const version = async () =>
    (await sql<{ schema_version: number }>`PRAGMA schema_version`.execute(db)).rows[0]!.schema_version;
  const before = await version();
  await up(db, 'sqlite');
  assert.equal(await version(), before, 'the replay changed the schema');
  const check = await sql<{ integrity_check: string }>`PRAGMA integrity_check`.execute(db);
  assert.deepEqual(check.rows, [{ integrity_check: 'ok' }]);
}
