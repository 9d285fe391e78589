import type { AppContext } from './context.ts';
import { createDeliveryWorker } from './events/delivery-worker.ts';
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
  const deliveries = createDeliveryWorker(ctx);
  await deliveries.ready; // LISTEN in place before the caller reports being up
  const workers: Worker[] = [createMailSender(ctx), deliveries];
  return workers;
}

/** Stops every worker, letting in-flight work finish. */
export async function stopWorkers(workers: Worker[]): Promise<void> {
  await Promise.all(workers.map((w) => w.stop()));
}
