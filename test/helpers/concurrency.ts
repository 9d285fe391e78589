import { setTimeout as sleep } from 'node:timers/promises';
import { type Kysely, sql } from 'kysely';

/**
 * Runs `first` until it calls `hold` and keeps it there while `second` runs: 'committed' when
 * `second` finished within `waitMs`, 'waiting' when it was still blocked then. Both finish before
 * this returns.
 */
export async function whileOpen(
  first: (hold: () => Promise<void>) => Promise<unknown>,
  second: () => Promise<unknown>,
  waitMs = 3000,
): Promise<'committed' | 'waiting'> {
  const gate = latch();
  const atHold = latch();
  const one = first(() => {
    atHold.open();
    return gate.opened;
  });
  await atHold.opened;
  const two = second();
  const outcome = await Promise.race([
    two.then(() => 'committed' as const),
    sleep(waitMs).then(() => 'waiting' as const),
  ]);
  gate.open();
  await Promise.all([one, two]);
  return outcome;
}

/** A promise (`opened`) that resolves once `open` is called. */
export function latch(): { opened: Promise<void>; open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

/** Polls `check` every 10 ms until it holds; throws naming `what` after `timeoutMs`. */
export async function until(what: string, check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await sleep(10);
  }
}

/** How many sessions of this PostgreSQL database wait on a lock now. */
// biome-ignore lint/suspicious/noExplicitAny: any database of the tests.
export async function sessionsWaitingOnLocks(db: Kysely<any>): Promise<number> {
  const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity
    WHERE datname = current_database() AND wait_event_type = 'Lock'`.execute(db);
  return rows[0]!.n;
}
