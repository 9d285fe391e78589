import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import type { AppContext } from '../context.ts';
import { migrate, openDatabase } from '../db/database.ts';
import { systemClock } from '../lib/time.ts';
import { createRateLimiter } from '../ratelimit/limiter.ts';
import { startWorkers, stopWorkers } from '../workers.ts';
import { exitOnSignals } from './shutdown.ts';

/**
 * `ads worker`: the background workers (webhook deliveries, mail) without the API, for scaling them
 * apart from it. Runs until SIGTERM/SIGINT, then lets in-flight attempts finish and exits 0.
 */
export async function workerCommand(config: Readonly<Config>, logger: Logger): Promise<number> {
  const database = openDatabase(config.database);
  let workers: Awaited<ReturnType<typeof startWorkers>>;
  try {
    const applied = await migrate(database);
    if (applied.length) logger.info({ migrations: applied }, 'migrations applied');
    // The workers read nothing from it; AppContext simply requires one.
    const rateLimiter = createRateLimiter({ now: systemClock, logger });
    const ctx: AppContext = { config, database, clock: systemClock, logger, rateLimiter };
    workers = await startWorkers(ctx);
  } catch (err) {
    await database.close().catch(() => {});
    throw err;
  }
  logger.info({ workers: workers.map((w) => w.name), database: database.dialect }, 'worker started');
  exitOnSignals(logger, 'finishing in-flight work', () => stopWorkers(workers).then(() => database.close()));
  return -1;
}
