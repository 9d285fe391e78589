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
  let release!: () => void;
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  let reached!: () => void;
  const atHold = new Promise<void>((resolve) => {
    reached = resolve;
  });
  const one = first(() => {
    reached();
    return gate;
  });
  await atHold;
  const two = second();
  const outcome = await Promise.race([
    two.then(() => 'committed' as const),
    sleep(waitMs).then(() => 'waiting' as const),
  ]);
  release();
  await Promise.all([one, two]);
  return outcome;
}
