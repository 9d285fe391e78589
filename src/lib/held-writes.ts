import type { Socket } from 'node:net';

/** The longest a held write waits for the others of its turn (a turn of slow requests). */
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

/**
 * Makes every held write now. Long synchronous work calls it first (a search, a group commit's
 * COMMIT), so that the answers finished before it are not kept for its whole run.
 */
export function releaseHeldWrites(): void {
  if (held.length === 0) return;
  const batch = held;
  held = [];
  // A released write's callback can start the stream's next write at once: that one goes out now.
  releasing = true;
  try {
    for (const state of batch) {
      state.holding = false;
      const writes = state.pending;
      state.pending = [];
      for (const write of writes) write();
    }
  } finally {
    releasing = false;
  }
}

/** Makes one connection's held writes now (it is being destroyed: what was written still goes). */
function releaseOne(state: HoldState): void {
  if (!state.holding) return;
  held.splice(held.indexOf(state), 1);
  state.holding = false;
  const writes = state.pending;
  state.pending = [];
  releasing = true;
  try {
    for (const write of writes) write();
  } finally {
    releasing = false;
  }
}

const endOfTurn = () => {
  scheduled = false;
  releaseHeldWrites();
};

/** Whether a write on this connection is to wait for the turn's end (and now waits). */
function hold(state: HoldState): boolean {
  if (releasing) return false;
  if (state.holding) return true;
  const now = performance.now();
  if (held.length > 0 && now - heldSince > state.holdMs) releaseHeldWrites();
  if (held.length === 0) heldSince = now;
  state.holding = true;
  held.push(state);
  if (!scheduled) {
    scheduled = true;
    setImmediate(endOfTurn);
  }
  return true;
}

/**
 * Holds `socket`'s writes until the end of the event-loop turn they are made in (`setImmediate`),
 * to go out together with the other connections' (as Redis writes its replies just before it
 * polls again): see src/http/response-batching.ts for why.
 *
 * The hold is in the stream: a Writable makes one `_write`/`_writev` call at a time, and the
 * connection's first call of a turn waits until the turn ends, its callback with it, so the
 * stream's own order (`end()` after the data, the next write after this one) is kept. A write
 * waits at most `holdMs` for the rest of its turn counted from the oldest held one, checked as each
 * connection's first write of the turn is held; long synchronous work between writes calls
 * `releaseHeldWrites` itself. A connection destroyed while it holds a write makes it first.
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
  // A write followed at once by destroy() (an answer to unparseable HTTP, then the close) still
  // goes out, as it would have unheld: the held write is made before the socket lets go.
  const sd = socket as unknown as {
    _destroy: (this: Socket, err: Error | null, cb: (err?: Error | null) => void) => void;
  };
  const destroy = sd._destroy;
  sd._destroy = function (this: Socket, err, cb) {
    releaseOne(state);
    destroy.call(this, err, cb);
  };
}
