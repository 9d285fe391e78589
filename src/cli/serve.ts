import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import { startServer } from '../server.ts';
import { DEFAULT_DRAIN_TIMEOUT_MS, exitOnSignals } from './shutdown.ts';

/**
 * `ads serve`: runs until SIGTERM/SIGINT, then drains in-flight requests and background attempts
 * and exits 0. Signal handlers are in place before start-up, so a signal during start-up also ends
 * cleanly.
 */
export async function serveCommand(config: Readonly<Config>, logger: Logger): Promise<number> {
  const starting = startServer(config, logger);
  exitOnSignals(
    logger,
    'draining in-flight requests',
    () => starting.then((server) => server.close()),
    drainTimeoutMs(config),
  );

  const server = await starting;
  if (server.bootstrap) {
    const { account, admin, api_key } = server.bootstrap;
    process.stdout.write(
      [
        `Created account ${account.id} (${account.name}) with admin ${admin.email}.`,
        `Admin API key (shown once, keep it safe): ${api_key.key}`,
        tryLine(server.url, api_key.key, config.trustProxy),
        '',
      ].join('\n'),
    );
  }
  process.stdout.write(`Serving ${server.url}/v1\n`);
  return -1;
}

/**
 * The first request to try. Behind a trusted proxy the service listens in plain HTTP and refuses a
 * request that does not say the proxy received it over HTTPS (403 https_required), so the line
 * says it as the proxy would.
 */
export function tryLine(url: string, key: string, trustProxy: boolean): string {
  const proxied = trustProxy ? ' -H "X-Forwarded-Proto: https"' : '';
  return `Try: curl -k ${url}/v1/data -H "Authorization: Bearer ${key}"${proxied}`;
}

/** The drain outlasts the longest webhook attempt in flight, so a stop never cuts one short. */
export function drainTimeoutMs(config: Readonly<Config>): number {
  return Math.max(DEFAULT_DRAIN_TIMEOUT_MS, config.webhook.timeoutMs + 10_000);
}
