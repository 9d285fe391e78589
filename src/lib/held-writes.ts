import type { Socket } from 'node:net';

/**
 * How long the oldest held write may have waited when another connection's is about to be held:
 * past it, the held ones go out first. It bounds the wait only where writes follow each other;
 * long synchronous work between them calls `releaseHeldWrites` itself (searches, group commits).
 */
export const HOLD_MS = 1;

type WriteFn = (this: Socket, ...args: never[]) => void;

/** Per connection: whether its writes are held, the held ones, and how long it lets them wait. */
interface HoldState {
  holding: boolean;
  pending: (() => void)[];
  holdMs: number;
}

// One event loop per process (or worker thread): the held writes are its own, whatever server they
// belong to.
let held: HoldState[] = [];
let heldSince = 0;
let scheduled = false;
let releasing = false;

const schedule = () => {
  if (scheduled) return;
  scheduled = true;
  setImmediate(endOfTurn);
};

/**
 * Makes the writes `batch` holds, in order. A released write's callback can start the stream's
 * next write at once (`releasing`): that one goes out now too. If a callback throws, the
 * connections not yet released are held again, to go out at the turn's end, and the error goes on.
 */
function release(batch: HoldState[]): void {
  const outer = releasing;
  releasing = true;
  let i = 0;
  try {
    for (; i < batch.length; i++) {
      const state = batch[i]!;
      while (state.pending.length > 0) state.pending.shift()!();
      state.holding = false;
    }
  } finally {
    releasing = outer;
    if (i < batch.length) {
      held.push(...batch.slice(i));
      schedule();
    }
  }
}

/**
 * Makes every held write now. Long synchronous work calls it first (a search, a group commit's
 * COMMIT), so that the answers finished before it are not kept for its whole run.
 */
export function releaseHeldWrites(): void {
  if (held.length === 0) return;
  const batch = held;
  held = [];
  release(batch);
}

function endOfTurn(): void {
  scheduled = false;
  releaseHeldWrites();
}

/** Whether a write on this connection is to wait for the turn's end (and now waits). */
function hold(state: HoldState): boolean {
  if (releasing) return false;
  if (state.holding) return true;
  const now = performance.now();
  if (held.length > 0 && now - heldSince > state.holdMs) releaseHeldWrites();
  if (held.length === 0) heldSince = now;
  state.holding = true;
  held.push(state);
  schedule();
  return true;
}

/**
 * Holds `socket`'s writes until the end of the event-loop turn they are made in (`setImmediate`),
 * to go out together with the other connections' (as Redis writes its replies just before it
 * polls again): see src/http/response-batching.ts for why.
 *
 * The hold is in the stream: a Writable makes one `_write`/`_writev` call at a time, and the
 * connection's first call of a turn waits until the turn ends, its callback with it, so the
 * stream's own order (`end()` after the data, the next write after this one) is kept. A write made
 * in the check phase itself (after the turn's release) waits for the next one. `destroy()` on a
 * connection that holds a write makes it first, and what is queued behind it, as an unheld stream
 * would have sent them (an answer to unparseable HTTP is written and destroyed at once).
 */
export function holdWritesPerTurn(socket: Socket, holdMs = HOLD_MS): void {
  const state: HoldState = { holding: false, pending: [], holdMs };
  const s = socket as unknown as Record<'_write' | '_writev', WriteFn>;
  for (const method of ['_write', '_writev'] as const) {
    const original = s[method];
    s[method] = function (this: Socket, ...args: never[]) {
      if (!this.destroyed && hold(state)) state.pending.push(() => original.apply(this, args));
      else original.apply(this, args);
    };
  }
  const destroy = socket.destroy;
  socket.destroy = function (this: Socket, ...args: Parameters<Socket['destroy']>) {
    if (state.holding && !this.destroyed) {
      const at = held.indexOf(state);
      if (at !== -1) held.splice(at, 1);
      release([state]);
    }
    return destroy.apply(this, args);
  };
}
