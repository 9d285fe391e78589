import { setTimeout as sleep } from 'node:timers/promises';

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
