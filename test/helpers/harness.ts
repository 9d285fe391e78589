import { after, before, describe } from 'node:test';
import type { FastifyInstance } from 'fastify';
import pino, { type Logger } from 'pino';
import { buildApp } from '../../src/app.ts';
import { type Config, loadConfig } from '../../src/config.ts';
import type { AppContext } from '../../src/context.ts';
import { type Database, migrate, openDatabase } from '../../src/db/database.ts';
import { newId } from '../../src/lib/ids.ts';
import type { Clock } from '../../src/lib/time.ts';
import { createAccount, type PlanName } from '../../src/modules/accounts/service.ts';
import { issueKey } from '../../src/modules/api-keys/service.ts';
import { insertUser } from '../../src/modules/users/repo.ts';
import { createRateLimiter } from '../../src/ratelimit/limiter.ts';
import { assertContract } from './contract.ts';
import { createTestDatabase, postgresSkipReason, type TestDialect } from './databases.ts';

export interface TestResponse {
  status: number;
  headers: Record<string, string | string[] | number | undefined>;
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON bodies.
  body: any;
  raw: string;
}

export interface RequestOptions {
  key?: string | null;
  body?: unknown;
  rawBody?: string;
  headers?: Record<string, string>;
}

/** A fresh app on a fresh migrated database, driven through HTTP (inject). */
export interface Harness {
  dialect: TestDialect;
  app: FastifyInstance;
  ctx: AppContext;
  database: Database;
  config: Config;
  /** Settable clock; defaults to real time. */
  clock: { now: number | null };
  request(method: string, url: string, opts?: RequestOptions): Promise<TestResponse>;
  account(plan?: PlanName): Promise<TestAccount>;
}

export interface TestAccount {
  id: string;
  adminId: string;
  adminKey: string;
  /** A new user of this account with the role and a key with the scopes. */
  user(role: 'member' | 'admin', scopes: string[]): Promise<{ id: string; key: string; keyId: string }>;
}

/** Settings for tests; individual suites override what they need. */
export function testConfig(dataDir: string, overrides: Record<string, string> = {}): Config {
  return { ...loadConfig({ ADS_DATA_DIR: dataDir, ADS_LOG_LEVEL: 'silent', ...overrides }) };
}

/** Builds a harness; call setup() in before() and teardown() in after(). */
export function createHarness(
  dialect: TestDialect,
  env: Record<string, string> = {},
  opts: { logger?: Logger; icuLocale?: string } = {},
) {
  const h = { dialect, clock: { now: null as number | null } } as Harness & {
    setup(): Promise<void>;
    teardown(): Promise<void>;
  };
  let drop: () => Promise<void> = async () => {};
  h.setup = async () => {
    const created = await createTestDatabase(dialect, { icuLocale: opts.icuLocale });
    drop = created.drop;
    h.config = { ...testConfig(created.dataDir, env), database: created.config };
    h.database = openDatabase(h.config.database);
    await migrate(h.database);
    const clock: Clock = () => h.clock.now ?? Date.now();
    const logger = opts.logger ?? pino({ level: 'silent' });
    const rateLimiter = createRateLimiter({
      redis: h.config.redisUrl
        ? { url: h.config.redisUrl, keyPrefix: `ads:test:${newId('request')}` }
        : undefined,
      now: clock,
      logger,
    });
    h.ctx = { config: h.config, database: h.database, clock, logger, rateLimiter };
    h.app = await buildApp(h.ctx);
    await h.app.ready();
  };
  h.teardown = async () => {
    await h.app?.close();
    await h.database?.close();
    await drop();
  };
  h.request = async (method, url, opts = {}) => {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.key) headers.authorization = `Bearer ${opts.key}`;
    let payload: string | undefined;
    if (opts.rawBody !== undefined) payload = opts.rawBody;
    else if (opts.body !== undefined) {
      payload = JSON.stringify(opts.body);
      headers['content-type'] ??= 'application/json';
    }
    const res = await h.app.inject({ method: method as 'GET', url, headers, payload });
    let body: unknown = null;
    if (res.body) {
      try {
        body = JSON.parse(res.body);
      } catch {
        body = res.body;
      }
    }
    // Every response the suite sees must match the OpenAPI document (issue 8, contract test).
    assertContract(h.app, { method, url, status: res.statusCode, headers: res.headers, raw: res.body });
    return { status: res.statusCode, headers: res.headers, body, raw: res.body };
  };
  h.account = async (plan = 'free') => {
    const created = await createAccount(
      h.database,
      {
        name: `Test ${newId('account').slice(-6)}`,
        adminEmail: `admin-${newId('user').slice(-8)}@example.com`,
        plan,
      },
      h.ctx.clock,
    );
    const accountId = created.account.id;
    return {
      id: accountId,
      adminId: created.admin.id,
      adminKey: created.api_key.key,
      user: async (role, scopes) => {
        const userId = newId('user');
        const now = new Date().toISOString();
        const email = `${role}-${userId.slice(-8)}@example.com`;
        await insertUser(h.database.db, {
          account_id: accountId,
          id: userId,
          email,
          email_lower: email.toLowerCase(),
          role,
          status: 'active',
          created_at: now,
          updated_at: now,
        });
        const key = await issueKey(h.ctx, accountId, userId, { scopes });
        return { id: userId, key: key.key, keyId: key.id };
      },
    };
  };
  return h;
}

/**
 * Runs the same suite once per database: SQLite always, PostgreSQL when ADS_TEST_POSTGRES_URL is
 * set (and always in CI). Each run gets its own fresh database.
 */
export function describeEachDatabase(
  name: string,
  fn: (h: Harness) => void,
  opts: { env?: Record<string, string> } = {},
) {
  for (const dialect of ['sqlite', 'postgres'] as const) {
    const skip = dialect === 'postgres' ? postgresSkipReason() : false;
    describe(`${name} [${dialect}]`, { skip }, () => {
      const h = createHarness(dialect, opts.env);
      before(() => h.setup());
      after(() => h.teardown());
      fn(h);
    });
  }
}
