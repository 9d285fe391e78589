import type { Logger } from 'pino';
import type { Config } from './config.ts';
import type { Database } from './db/database.ts';
import type { Clock } from './lib/time.ts';
import type { RateLimiter } from './ratelimit/limiter.ts';

/** What services need from the running app: settings, the database, the clock and shared limiters. */
export interface AppContext {
  config: Readonly<Config>;
  database: Database;
  clock: Clock;
  logger: Logger;
  rateLimiter: RateLimiter;
}
