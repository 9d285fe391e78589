import type { Db } from '../db/types.ts';
import { newId } from '../lib/ids.ts';

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

/**
 * Records an event inside the caller's transaction (transactional outbox): the event exists if and
 * only if the change it describes was committed.
 */
export async function recordEvent(
  db: Db,
  accountId: string,
  name: EventName,
  data: Record<string, unknown>,
  at: string,
): Promise<string> {
  const id = newId('event');
  const payload = JSON.stringify({ id, event: name, timestamp: at, account_id: accountId, data });
  await db
    .insertInto('events')
    .values({ account_id: accountId, id, name, payload, created_at: at })
    .execute();
  return id;
}
