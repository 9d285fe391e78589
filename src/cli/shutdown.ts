import type { Logger } from 'pino';

/**
 * On the first SIGTERM or SIGINT: log, run `close` (drain in-flight work), then exit 0, or 1 when
 * closing failed. Later signals are ignored while closing.
 */
export function exitOnSignals(logger: Logger, what: string, close: () => Promise<void>): void {
  let closing = false;
  const shutdown = (signal: string) => {
    if (closing) return;
    closing = true;
    logger.info({ signal }, `shutting down: ${what}`);
    close().then(
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
}
