import type { AppContext } from '../../context.ts';
import { type IdempotencyClaim, markClaimCommitted } from '../../db/commit-claim.ts';
import { readSnapshot } from '../../db/snapshot.ts';
import { forbiddenAddressOf, validateWebhookUrl } from '../../events/ssrf.ts';
import { AppError, invalidField, notFound } from '../../http/errors.ts';
import { newId } from '../../lib/ids.ts';
import { secretBoxFor } from '../../lib/secrets.ts';
import { isoNow } from '../../lib/time.ts';
import {
  type AttemptRow,
  countWebhooks,
  type DeliveryRow,
  type DeliveryStatus,
  deleteWebhook,
  findWebhook,
  insertWebhook,
  listAttempts,
  listDeliveries,
  listWebhooks,
  updateWebhook,
  type WebhookRow,
} from './repo.ts';
import {
  type CreateWebhookInput,
  type DeliveryOut,
  MAX_WEBHOOKS_PER_ACCOUNT,
  type PatchWebhookInput,
  type WebhookOut,
} from './schemas.ts';

/** Row -> API shape; the sealed secret never leaves this function. */
export function toWebhook(row: WebhookRow): WebhookOut {
  return {
    id: row.id,
    url: row.url,
    events: JSON.parse(row.events) as string[],
    status: row.status,
    has_secret: row.sealed_secret !== null,
    disabled_reason: row.disabled_reason,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/** Delivery row plus its attempts -> API shape. */
export function toDelivery(row: DeliveryRow, attempts: AttemptRow[]): DeliveryOut {
  return {
    id: row.id,
    event: row.event_name,
    event_id: row.event_id,
    status: row.status,
    attempts: attempts.map((a) => ({
      at: a.at,
      status_code: a.status_code === null ? null : Number(a.status_code),
      duration_ms: Number(a.duration_ms),
      error: a.error,
    })),
    next_attempt_at: row.status === 'pending' ? row.next_attempt_at : null,
    created_at: row.created_at,
  };
}

async function checkUrl(ctx: AppContext, raw: string): Promise<string> {
  const { allowPrivate } = ctx.config.webhook;
  const check = validateWebhookUrl(raw, { allowPrivate });
  // The guard's reasons read "url must …"; invalidField names the field itself.
  if (!check.ok) throw invalidField('url', check.reason.replace(/^url /, ''));
  const forbidden = allowPrivate ? null : await forbiddenAddressOf(check.url.hostname);
  if (forbidden !== null) {
    // The address is not named: the answer would otherwise map internal names to internal
    // addresses for anyone allowed to register a webhook (split-horizon DNS).
    throw invalidField(
      'url',
      'host resolves to a private, loopback, link-local, multicast or reserved address',
    );
  }
  return check.url.href;
}

/**
 * Exactly ["*"] or a list of event names (the body schema lets only known names and "*" through);
 * duplicates dropped, order kept.
 */
function checkEvents(events: string[]): string[] {
  const unique = [...new Set(events)];
  if (unique.includes('*') && unique.length > 1) {
    throw invalidField('events', 'must be exactly ["*"] or a list of event names');
  }
  return unique;
}

const seal = (ctx: AppContext, secret: string) => secretBoxFor(ctx.config).seal(secret);

export async function createWebhook(
  ctx: AppContext,
  accountId: string,
  input: CreateWebhookInput,
  claim?: IdempotencyClaim,
) {
  const url = await checkUrl(ctx, input.url);
  const events = checkEvents(input.events);
  const now = isoNow(ctx.clock);
  const row: WebhookRow = {
    account_id: accountId,
    id: newId('webhook'),
    url,
    events: JSON.stringify(events),
    sealed_secret: input.secret === undefined ? null : seal(ctx, input.secret),
    status: 'active',
    disabled_reason: null,
    created_at: now,
    updated_at: now,
  };
  const { db, dialect } = ctx.database;
  await db.transaction().execute(async (trx) => {
    // Serialises concurrent creates of one account so the cap holds (SQLite serialises writers anyway).
    // FOR NO KEY UPDATE: it does not hold up the account's other writes, whose foreign keys take a
    // share lock on the account's row.
    if (dialect === 'postgres') {
      await trx.selectFrom('accounts').select('id').where('id', '=', accountId).forNoKeyUpdate().execute();
    }
    if ((await countWebhooks(trx, accountId)) >= MAX_WEBHOOKS_PER_ACCOUNT) {
      throw new AppError(
        'invalid_request',
        `An account can have at most ${MAX_WEBHOOKS_PER_ACCOUNT} webhooks; delete one before adding another.`,
        { details: [{ field: 'url', message: `at most ${MAX_WEBHOOKS_PER_ACCOUNT} webhooks per account` }] },
      );
    }
    await insertWebhook(trx, row);
    await markClaimCommitted(trx, claim);
  });
  return toWebhook(row);
}

export async function getWebhook(ctx: AppContext, accountId: string, id: string) {
  const row = await findWebhook(ctx.database.db, accountId, id);
  if (!row) throw notFound('webhook', id);
  return toWebhook(row);
}

export async function listAccountWebhooks(
  ctx: AppContext,
  accountId: string,
  page: { limit: number; offset: number },
) {
  // One snapshot for the page and its total: on PostgreSQL they are two statements.
  const { rows, total } = await readSnapshot(ctx.database.db, ctx.database.dialect, (db) =>
    listWebhooks(db, accountId, page),
  );
  return { webhooks: rows.map(toWebhook), total };
}

/** Changes url, events, secret (null removes it) and re-enables with `status: "active"`. */
export async function patchWebhook(ctx: AppContext, accountId: string, id: string, input: PatchWebhookInput) {
  const url = input.url === undefined ? undefined : await checkUrl(ctx, input.url);
  const events = input.events === undefined ? undefined : JSON.stringify(checkEvents(input.events));
  const sealed =
    input.secret === undefined ? undefined : input.secret === null ? null : seal(ctx, input.secret);
  const { db, dialect } = ctx.database;
  return db.transaction().execute(async (trx) => {
    const row = await findWebhook(trx, accountId, id, { forUpdate: dialect });
    if (!row) throw notFound('webhook', id);
    const next: WebhookRow = { ...row };
    if (url !== undefined) next.url = url;
    if (events !== undefined) next.events = events;
    if (sealed !== undefined) next.sealed_secret = sealed;
    if (input.status === 'active') {
      next.status = 'active';
      next.disabled_reason = null;
    }
    const changed = (['url', 'events', 'sealed_secret', 'status'] as const).some((f) => next[f] !== row[f]);
    if (!changed) return toWebhook(row);
    next.updated_at = isoNow(ctx.clock);
    const { account_id: _a, id: _i, created_at: _c, ...patch } = next;
    await updateWebhook(trx, accountId, id, patch);
    return toWebhook(next);
  });
}

/** Deletes the webhook with its queued and past deliveries: nothing more is sent to it. */
export async function removeWebhook(ctx: AppContext, accountId: string, id: string) {
  const gone = await ctx.database.db.transaction().execute((trx) => deleteWebhook(trx, accountId, id));
  if (!gone) throw notFound('webhook', id);
}

/** A page of one webhook's deliveries with their attempts, newest first. */
export async function listWebhookDeliveries(
  ctx: AppContext,
  accountId: string,
  webhookId: string,
  q: { status?: DeliveryStatus; limit: number; offset: number },
) {
  // One snapshot: an attempt committing between the reads would otherwise be listed under a
  // delivery still shown as before it (pending, due at its old time), or the total miss the page.
  const { rows, total, attempts } = await readSnapshot(ctx.database.db, ctx.database.dialect, async (db) => {
    if (!(await findWebhook(db, accountId, webhookId))) throw notFound('webhook', webhookId);
    const page = await listDeliveries(db, accountId, webhookId, q);
    const ids = page.rows.map((r) => r.id);
    return { ...page, attempts: await listAttempts(db, accountId, ids) };
  });
  const byDelivery = new Map<string, AttemptRow[]>();
  for (const a of attempts) byDelivery.set(a.delivery_id, [...(byDelivery.get(a.delivery_id) ?? []), a]);
  return { deliveries: rows.map((r) => toDelivery(r, byDelivery.get(r.id) ?? [])), total };
}
