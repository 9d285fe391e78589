import { randomBytes } from 'node:crypto';

/** Id prefixes of decisions §1; every public id is `<prefix><ULID>`. */
export const ID_PREFIX = {
  account: 'acc_',
  user: 'usr_',
  data: 'dat_',
  webhook: 'wh_',
  event: 'evt_',
  request: 'req_',
  apiKey: 'key_',
  delivery: 'whd_',
  invitation: 'inv_',
  mail: 'msg_',
} as const;

export type IdKind = keyof typeof ID_PREFIX;

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/** Random bytes are drawn 4 KB at a time: one CSPRNG call per ~400 ids instead of one per id. */
const POOL_BYTES = 4096;
let pool = Buffer.alloc(0);
let poolAt = 0;

function random10(): Buffer {
  if (poolAt + 10 > pool.length) {
    pool = randomBytes(POOL_BYTES);
    poolAt = 0;
  }
  poolAt += 10;
  return pool.subarray(poolAt - 10, poolAt);
}

/**
 * A ULID: 48 bits of milliseconds then 80 random bits, Crockford base32, 26 characters.
 * Time-ordered ids keep B-tree inserts local; the random part makes them unguessable.
 */
export function ulid(now = Date.now()): string {
  let time = '';
  let t = now;
  for (let i = 0; i < 10; i++) {
    time = CROCKFORD[t % 32] + time;
    t = Math.floor(t / 32);
  }
  const bytes = random10();
  let rand = '';
  // 80 bits -> 16 base32 characters, 5 bits at a time.
  let acc = 0;
  let bits = 0;
  for (const byte of bytes) {
    acc = (acc << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      rand += CROCKFORD[(acc >> bits) & 31];
    }
    acc &= (1 << bits) - 1;
  }
  return time + rand;
}

/** A new public id of the given kind, e.g. `newId('data')` -> `dat_01JD…`. */
export function newId(kind: IdKind): string {
  return ID_PREFIX[kind] + ulid();
}

const ULID_RE = /^[0-9A-HJKMNP-TV-Z]{26}$/;

/** True when `id` is well formed for `kind`; malformed ids are answered like missing ones. */
export function isId(kind: IdKind, id: string): boolean {
  const prefix = ID_PREFIX[kind];
  return id.startsWith(prefix) && ULID_RE.test(id.slice(prefix.length));
}
