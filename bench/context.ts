import pino from 'pino';
import type { Config } from '../src/config.ts';
import type { AppContext } from '../src/context.ts';
import { migrate, openDatabase } from '../src/db/database.ts';
import { createRateLimiter } from '../src/ratelimit/limiter.ts';

/** An in-process service context for a benchmark: the database opened and migrated, logs silent. */
export async function benchContext(config: Config): Promise<AppContext> {
  const database = openDatabase(config.database);
  await migrate(database);
  const logger = pino({ level: 'silent' });
  return { config, database, clock: Date.now, logger, rateLimiter: createRateLimiter({ logger }) };
}
