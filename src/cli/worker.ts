import type { Logger } from 'pino';
import { type Config, checkSettingPaths } from '../config.ts';
import type { AppContext } from '../context.ts';
import { migrateLogged, openDatabase } from '../db/database.ts';
import { checkSecretKey } from '../lib/secret-check.ts';
import { systemClock } from '../lib/time.ts';
import { createRateLimiter } from '../ratelimit/limiter.ts';
import { startWorkers, stopWorkers } from '../workers.ts';
import { drainTimeoutMs } from './serve.ts';
import { exitOnSignals } from './shutdown.ts';

/**
 * `ads worker`: the background workers (webhook deliveries, mail) without the API, for scaling them
 * apart from it. Runs until SIGTERM/SIGINT, then lets in-flight attempts finish and exits 0. Signal
 * handlers are in place before start-up, so a signal during start-up also ends cleanly.
 */
export async function workerCommand(config: Readonly<Config>, logger: Logger): Promise<number> {
  checkSettingPaths(config, { tls: false });
  const database = openDatabase(config.database);
  const starting = (async () => {
    await migrateLogged(database, logger);
    await checkSecretKey(config, database);
    // The workers read nothing from it; AppContext simply requires one.
    const rateLimiter = createRateLimiter({ now: systemClock, logger });
    const ctx: AppContext = { config, database, clock: systemClock, logger, rateLimiter };
    return startWorkers(ctx);
  })();
  exitOnSignals(
    logger,
    'finishing in-flight work',
    () =>
      starting.then(
        (workers) => stopWorkers(workers).then(() => database.close()),
        () => database.close(),
      ),
    drainTimeoutMs(config),
  );
  let workers: Awaited<typeof starting>;
  try {
    workers = await starting;
  } catch (err) {
    await database.close().catch(() => {});
    throw err;
  }
  logger.info({ workers: workers.map((w) => w.name), database: database.dialect }, 'worker started');
  return -1;
}
