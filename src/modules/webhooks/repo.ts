import type { Selectable } from 'kysely';
import type {
  Db,
  Dialect,
  WebhookAttemptsTable,
  WebhookDeliveriesTable,
  WebhooksTable,
} from '../../db/types.ts';

export type WebhookRow = WebhooksTable;
export type DeliveryRow = Selectable<WebhookDeliveriesTable>;
export type AttemptRow = WebhookAttemptsTable;
export type DeliveryStatus = DeliveryRow['status'];

export async function insertWebhook(db: Db, row: WebhookRow): Promise<void> {
  await db.insertInto('webhooks').values(row).execute();
}

/** One webhook of one account; `forUpdate` locks the row on PostgreSQL. */
export async function findWebhook(
  db: Db,
  accountId: string,
  id: string,
  opts: { forUpdate?: Dialect } = {},
): Promise<WebhookRow | undefined> {
  let q = db.selectFrom('webhooks').selectAll().where('account_id', '=', accountId).where('id', '=', id);
  if (opts.forUpdate === 'postgres') q = q.forUpdate();
  return q.executeTakeFirst();
}

export async function countWebhooks(db: Db, accountId: string): Promise<number> {
  const row = await db
    .selectFrom('webhooks')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('account_id', '=', accountId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** A page of an account's webhooks, newest first, plus the total. */
export async function listWebhooks(db: Db, accountId: string, page: { limit: number; offset: number }) {
  const [rows, total] = await Promise.all([
    db
      .selectFrom('webhooks')
      .selectAll()
      .where('account_id', '=', accountId)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(page.limit)
      .offset(page.offset)
      .execute(),
    countWebhooks(db, accountId),
  ]);
  return { rows, total };
}

export async function updateWebhook(
  db: Db,
  accountId: string,
  id: string,
  patch: Partial<Omit<WebhookRow, 'account_id' | 'id' | 'created_at'>>,
): Promise<void> {
  await db
    .updateTable('webhooks')
    .set(patch)
    .where('account_id', '=', accountId)
    .where('id', '=', id)
    .execute();
}

/** Deletes a webhook with its deliveries and their attempts; false when there was no such webhook. */
export async function deleteWebhook(db: Db, accountId: string, id: string): Promise<boolean> {
  const gone = await db
    .deleteFrom('webhooks')
    .where('account_id', '=', accountId)
    .where('id', '=', id)
    .executeTakeFirst();
  if (Number(gone.numDeletedRows) === 0) return false;
  await db
    .deleteFrom('webhook_attempts')
    .where('account_id', '=', accountId)
    .where('delivery_id', 'in', (eb) =>
      eb
        .selectFrom('webhook_deliveries')
        .select('id')
        .where('account_id', '=', accountId)
        .where('webhook_id', '=', id),
    )
    .execute();
  await db
    .deleteFrom('webhook_deliveries')
    .where('account_id', '=', accountId)
    .where('webhook_id', '=', id)
    .execute();
  return true;
}

/**
 * Disables an active webhook and fails its waiting deliveries (they can be retried by hand once it
 * is re-enabled). Deliveries in flight finish their attempt. False when it was not active, or, with
 * `url`, no longer points there.
 */
export async function disableWebhook(
  db: Db,
  accountId: string,
  id: string,
  reason: string,
  now: string,
  url?: string,
): Promise<boolean> {
  let update = db
    .updateTable('webhooks')
    .set({ status: 'disabled', disabled_reason: reason, updated_at: now })
    .where('account_id', '=', accountId)
    .where('id', '=', id)
    .where('status', '=', 'active');
  if (url !== undefined) update = update.where('url', '=', url);
  const res = await update.executeTakeFirst();
  if (Number(res.numUpdatedRows) === 0) return false;
  await db
    .updateTable('webhook_deliveries')
    .set({ status: 'failed', next_attempt_at: null, manual: 0, updated_at: now })
    .where('account_id', '=', accountId)
    .where('webhook_id', '=', id)
    .where('status', '=', 'pending')
    .where('locked_until', 'is', null)
    .execute();
  return true;
}

/** A page of one webhook's deliveries, newest first, optionally of one status, plus the total. */
export async function listDeliveries(
  db: Db,
  accountId: string,
  webhookId: string,
  q: { status?: DeliveryStatus; limit: number; offset: number },
) {
  let base = db
    .selectFrom('webhook_deliveries')
    .where('account_id', '=', accountId)
    .where('webhook_id', '=', webhookId);
  if (q.status) base = base.where('status', '=', q.status);
  const [rows, count] = await Promise.all([
    base
      .selectAll()
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(q.limit)
      .offset(q.offset)
      .execute(),
    base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(count.n) };
}

export async function findDelivery(
  db: Db,
  accountId: string,
  webhookId: string,
  id: string,
): Promise<DeliveryRow | undefined> {
  return db
    .selectFrom('webhook_deliveries')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('id', '=', id)
    .where('webhook_id', '=', webhookId)
    .executeTakeFirst();
}

/** The attempts of the given deliveries, oldest first. */
export async function listAttempts(db: Db, accountId: string, deliveryIds: string[]): Promise<AttemptRow[]> {
  if (deliveryIds.length === 0) return [];
  return db
    .selectFrom('webhook_attempts')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('delivery_id', 'in', deliveryIds)
    .orderBy('delivery_id')
    .orderBy('attempt')
    .execute();
}

/**
 * Queues a delivery to be sent again now. A waiting delivery is only brought forward; a finished one
 * is reopened for one manual attempt. A delivery whose attempt is in flight is left alone; one whose
 * lease ran out loses that claim (token and lease cleared), so an attempt that outlived its lease
 * cannot write its outcome over this requeue afterwards, as with a lease another worker took over.
 */
export async function requeueDelivery(db: Db, accountId: string, id: string, now: string): Promise<boolean> {
  const res = await db
    .updateTable('webhook_deliveries')
    .set((eb) => ({
      manual: eb.case().when('status', '=', 'pending').then(eb.ref('manual')).else(1).end(),
      status: 'pending',
      next_attempt_at: now,
      locked_until: null,
      claim_token: null,
      updated_at: now,
    }))
    .where('account_id', '=', accountId)
    .where('id', '=', id)
    .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<=', now)]))
    .executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}
