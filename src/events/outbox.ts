import { sql } from 'kysely';
import { hotQuery } from '../db/database.ts';
import type { Db, Dialect } from '../db/types.ts';
import { newId } from '../lib/ids.ts';
import { announceDeliveries, DELIVERY_CHANNEL } from './notify.ts';

/** Event names of spec Events and decisions §4/§7. */
export const EVENT_NAMES = [
  'data.created',
  'data.updated',
  'data.deleted',
  'user.created',
  'user.updated',
  'user.deleted',
] as const;
export type EventName = (typeof EVENT_NAMES)[number];

/** True when a webhook subscribed to `subscribed` (a stored `events` list) receives `name`. */
export function subscribes(subscribed: readonly string[], name: string): boolean {
  return subscribed.includes('*') || subscribed.includes(name);
}

/**
 * Records an event inside the caller's transaction (transactional outbox): the event exists if and
 * only if the change it describes was committed. In the same transaction it fans out one pending
 * delivery per active webhook of the account that subscribed to the event, so a crash between the
 * change and the delivery loses nothing.
 */
const insertEvent = hotQuery(
  'insert into events (account_id, id, name, payload, created_at) values (?, ?, ?, ?, ?)',
);
const ACTIVE_WEBHOOKS = `select id, events from webhooks where account_id = ? and status = 'active'`;
const activeWebhooks = hotQuery<{ id: string; events: string }>(ACTIVE_WEBHOOKS);
// PostgreSQL: the event's insert and the webhook lookup in one round trip (a data-modifying WITH
// runs to completion whether or not the query reads it). Parameters: the insert's five, then the
// account again.
const insertEventFindWebhooks = hotQuery<{ id: string; events: string }>(
  `with e as (insert into events (account_id, id, name, payload, created_at) values (?, ?, ?, ?, ?)) ${ACTIVE_WEBHOOKS}`,
);

export async function recordEvent(
  db: Db,
  dialect: Dialect,
  accountId: string,
  name: EventName,
  data: Record<string, unknown>,
  at: string,
): Promise<string> {
  const id = newId('event');
  const payload = JSON.stringify({ id, event: name, timestamp: at, account_id: accountId, data });
  const event = [accountId, id, name, payload, at];
  let hooks: { id: string; events: string }[];
  if (dialect === 'postgres') hooks = await insertEventFindWebhooks(db, dialect, [...event, accountId]);
  else {
    await insertEvent(db, dialect, event);
    hooks = await activeWebhooks(db, dialect, [accountId]);
  }
  const targets = hooks.filter((h) => subscribes(JSON.parse(h.events) as string[], name));
  if (targets.length === 0) return id;
  const deliveries = targets.map((h) => ({
    account_id: accountId,
    id: newId('delivery'),
    webhook_id: h.id,
    event_id: id,
    event_name: name,
    status: 'pending' as const,
    next_attempt_at: at,
    created_at: at,
    updated_at: at,
  }));
  if (dialect === 'postgres') {
    // The deliveries and their announcement (delivered at commit) in one round trip.
    await db
      .with('d', (q) => q.insertInto('webhook_deliveries').values(deliveries))
      .selectNoFrom(sql<string>`pg_notify(${DELIVERY_CHANNEL}, '')`.as('n'))
      .execute();
  } else {
    await db.insertInto('webhook_deliveries').values(deliveries).execute();
    await announceDeliveries(db);
  }
  return id;
}
