import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import { startServer } from '../server.ts';

/**
 * `ads serve`: runs until SIGTERM/SIGINT, then drains in-flight requests and background attempts
 * and exits 0. Signal handlers are in place before start-up, so a signal during start-up also ends
 * cleanly.
 */
export async function serveCommand(config: Readonly<Config>, logger: Logger): Promise<number> {
  const starting = startServer(config, logger);
  let closing = false;
  const shutdown = (signal: string) => {
    if (closing) return;
    closing = true;
    logger.info({ signal }, 'shutting down: draining in-flight requests');
    starting
      .then((server) => server.close())
      .then(
        () => {
          logger.info('stopped');
          logger.flush?.();
          process.exit(0);
        },
        (err: unknown) => {
          logger.error({ err }, 'shutdown failed');
          process.exit(1);
        },
      );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));

  const server = await starting;
  if (server.bootstrap) {
    const { account, admin, api_key } = server.bootstrap;
    process.stdout.write(
      [
        `Created account ${account.id} (${account.name}) with admin ${admin.email}.`,
        `Admin API key (shown once, keep it safe): ${api_key.key}`,
        `Try: curl -k ${server.url}/v1/data -H "Authorization: Bearer ${api_key.key}"`,
        '',
      ].join('\n'),
    );
  }
  process.stdout.write(`Serving ${server.url}/v1\n`);
  return -1;
}
