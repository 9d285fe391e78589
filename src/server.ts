import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { buildApp } from './app.ts';
import type { Config } from './config.ts';
import type { AppContext } from './context.ts';
import { type Database, migrate, openDatabase } from './db/database.ts';
import { systemClock } from './lib/time.ts';
import { loadTls } from './lib/tls.ts';
import { anyAccount } from './modules/accounts/repo.ts';
import { type CreatedAccount, createAccount } from './modules/accounts/service.ts';
import { createRateLimiter } from './ratelimit/limiter.ts';
import { startWorkers, stopWorkers } from './workers.ts';

export interface RunningServer {
  app: FastifyInstance;
  url: string;
  database: Database;
  bootstrap: CreatedAccount | null;
  close(): Promise<void>;
}

/**
 * Opens and migrates the database, creates a first account on an empty one, and serves HTTPS (or
 * plain HTTP behind a trusted proxy). The caller owns signals and printing.
 */
export async function startServer(config: Readonly<Config>, logger: Logger): Promise<RunningServer> {
  const database = openDatabase(config.database);
  try {
    const applied = await migrate(database);
    if (applied.length) logger.info({ migrations: applied }, 'migrations applied');
    let bootstrap: CreatedAccount | null = null;
    if (!(await anyAccount(database.db))) {
      bootstrap = await createAccount(database, { name: 'Default account', adminEmail: 'admin@localhost' });
    }
    const tls = config.trustProxy ? undefined : await loadTls(config);
    if (tls?.generated)
      logger.info({ cert: tls.generated }, 'generated a self-signed development certificate');
    const rateLimiter = createRateLimiter({
      redis: config.redisUrl ? { url: config.redisUrl, keyPrefix: 'ads:rl' } : undefined,
      now: systemClock,
      logger: logger.child({ component: 'rate-limit' }),
    });
    const ctx: AppContext = { config, database, clock: systemClock, logger, rateLimiter };
    const app = await buildApp(ctx, tls ? { https: { key: tls.key, cert: tls.cert } } : {});
    await app.listen({ host: config.host, port: config.port });
    const workers = await startWorkers(ctx);
    const address = app.server.address();
    const port = typeof address === 'object' && address ? address.port : config.port;
    const host = config.host.includes(':') ? `[${config.host}]` : config.host;
    const url = `${tls ? 'https' : 'http'}://${host}:${port}`;
    logger.info({ url: `${url}/v1`, database: database.dialect }, 'listening');
    return {
      app,
      url,
      database,
      bootstrap,
      close: async () => {
        // Stop taking requests and let in-flight ones finish, then let workers finish their attempts.
        await app.close();
        await stopWorkers(workers);
        await database.close();
      },
    };
  } catch (err) {
    await database.close().catch(() => {});
    throw err;
  }
}
