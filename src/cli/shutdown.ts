import type { Logger } from 'pino';

/** Longest a drain may take by default before the process gives up on it and exits 1. */
export const DEFAULT_DRAIN_TIMEOUT_MS = 30_000;

/**
 * On the first SIGTERM or SIGINT: log, run `close` (drain in-flight work), then exit 0, or 1 when
 * closing failed or did not finish within `timeoutMs`. Later signals are ignored while closing.
 */
export function exitOnSignals(
  logger: Logger,
  what: string,
  close: () => Promise<void>,
  timeoutMs = DEFAULT_DRAIN_TIMEOUT_MS,
): void {
  let closing = false;
  const shutdown = (signal: string) => {
    if (closing) return;
    closing = true;
    logger.info({ signal, timeout_ms: timeoutMs }, `shutting down: ${what}`);
    const timer = setTimeout(() => {
      logger.error({ timeout_ms: timeoutMs }, 'shutdown timed out; exiting with work unfinished');
      logger.flush?.();
      process.exit(1);
    }, timeoutMs);
    timer.unref();
    close().then(
      () => {
        logger.info('stopped');
        logger.flush?.();
        process.exit(0);
      },
      (err: unknown) => {
        logger.error({ err }, 'shutdown failed');
        logger.flush?.();
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}
