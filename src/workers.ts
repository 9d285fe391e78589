import type { AppContext } from './context.ts';
import { createMailSender } from './mail/sender.ts';

/** A background loop that can be stopped: stop() finishes in-flight work and resolves. */
export interface Worker {
  name: string;
  stop(): Promise<void>;
}

/**
 * Starts the background work of `ads serve` (and alone, of `ads worker`): outgoing mail and webhook
 * deliveries. Each worker owns its loop, timeouts and backoff.
 */
export async function startWorkers(ctx: AppContext): Promise<Worker[]> {
  const workers: Worker[] = [createMailSender(ctx)];
  return workers;
}

/** Stops every worker, letting in-flight work finish. */
export async function stopWorkers(workers: Worker[]): Promise<void> {
  await Promise.all(workers.map((w) => w.stop()));
}
