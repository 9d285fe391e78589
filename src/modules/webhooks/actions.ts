import type { Dispatcher } from 'undici';
import type { AppContext } from '../../context.ts';
import { announceDeliveries } from '../../events/notify.ts';
import { sendWebhook } from '../../events/send.ts';
import { AppError, notFound } from '../../http/errors.ts';
import { newId } from '../../lib/ids.ts';
import { secretBoxFor } from '../../lib/secrets.ts';
import { isoNow } from '../../lib/time.ts';
import { findDelivery, findWebhook, listAttempts, requeueDelivery } from './repo.ts';
import type { DeliveryOut, TestResultOut } from './schemas.ts';
import { toDelivery } from './service.ts';

/**
 * Sends a signed `webhook.test` event now (also to a disabled webhook, to check a fix before
 * re-enabling) and reports what the receiver did. A refused or failing target is a result, not an
 * error of this call. The ping is not stored and is never retried.
 */
export async function pingWebhook(
  ctx: AppContext,
  dispatcher: Dispatcher,
  accountId: string,
  id: string,
): Promise<TestResultOut> {
  const hook = await findWebhook(ctx.database.db, accountId, id);
  if (!hook) throw notFound('webhook', id);
  const eventId = newId('event');
  const rawBody = JSON.stringify({
    id: eventId,
    event: 'webhook.test',
    timestamp: isoNow(ctx.clock),
    account_id: accountId,
    data: { webhook_id: id },
  });
  let secret: string | null = null;
  try {
    if (hook.sealed_secret !== null) secret = secretBoxFor(ctx.config).open(hook.sealed_secret);
  } catch (err) {
    // Sealed under another ADS_SECRET_KEY: never send unsigned; report it as a delivery would.
    const error = `cannot sign: ${(err as Error).message}`;
    return { success: false, status_code: null, latency_ms: 0, error, event_id: eventId };
  }
  const result = await sendWebhook(
    dispatcher,
    {
      url: hook.url,
      rawBody,
      eventName: 'webhook.test',
      deliveryId: newId('delivery'),
      messageId: eventId,
      secret,
    },
    { timeoutMs: ctx.config.webhook.timeoutMs, now: ctx.clock },
  );
  return {
    success: result.ok,
    status_code: result.statusCode,
    latency_ms: result.durationMs,
    error: result.error,
    event_id: eventId,
  };
}

/**
 * Queues one delivery to be sent again now and wakes the workers. A failed or succeeded delivery
 * gets one manual attempt; a waiting one is brought forward; one in flight is left to finish.
 */
export async function retryDelivery(
  ctx: AppContext,
  accountId: string,
  webhookId: string,
  deliveryId: string,
): Promise<DeliveryOut> {
  const { db } = ctx.database;
  const hook = await findWebhook(db, accountId, webhookId);
  if (!hook) throw notFound('webhook', webhookId);
  if (!(await findDelivery(db, accountId, webhookId, deliveryId))) throw notFound('delivery', deliveryId);
  if (hook.status !== 'active') {
    throw new AppError(
      'invalid_request',
      'The webhook is disabled; re-enable it with PATCH {"status": "active"} before retrying its deliveries.',
    );
  }
  if (await requeueDelivery(db, accountId, deliveryId, isoNow(ctx.clock))) await announceDeliveries(db);
  const row = await findDelivery(db, accountId, webhookId, deliveryId);
  if (!row) throw notFound('delivery', deliveryId);
  return toDelivery(row, await listAttempts(db, accountId, [deliveryId]));
}
