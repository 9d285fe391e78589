import type { AppContext } from './context.ts';
import { createDeliveryWorker } from './events/delivery-worker.ts';
import { createIdempotencyPurger } from './http/idempotency.ts';
import { createMailSender } from './mail/sender.ts';

/** A background loop that can be stopped: stop() finishes in-flight work and resolves. */
export interface Worker {
  name: string;
  stop(): Promise<void>;
}

/**
 * Starts the background work of `ads serve` (and alone, of `ads worker`): outgoing mail, webhook
 * deliveries, and the purge of expired idempotent answers. Each worker owns its loop and timeouts.
 */
export async function startWorkers(ctx: AppContext): Promise<Worker[]> {
  const deliveries = createDeliveryWorker(ctx);
  await deliveries.ready; // LISTEN in place before the caller reports being up
  const workers: Worker[] = [createMailSender(ctx), deliveries, createIdempotencyPurger(ctx)];
  return workers;
}

/** Stops every worker, letting in-flight work finish. */
export async function stopWorkers(workers: Worker[]): Promise<void> {
  await Promise.all(workers.map((w) => w.stop()));
}
