import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../context.ts';
import type { IdempotencyClaim } from '../db/commit-claim.ts';
import { createSecretBox, type SecretBox } from '../lib/secret-box.ts';
import { secretBoxFor } from '../lib/secrets.ts';
import type { Worker } from '../workers.ts';
import { bearerToken } from './auth.ts';
import { AppError } from './errors.ts';
import {
  claimIdempotencyKey,
  completeIdempotencyKey,
  findIdempotencyKey,
  purgeIdempotencyKeys,
  releaseIdempotencyKey,
} from './idempotency-repo.ts';

const TTL_MS = 24 * 3600 * 1000;
const WAIT_MS = 10_000;
/**
 * A run still `running` this long after it began is taken to be abandoned (its process crashed
 * between claiming the key and storing the answer), and a retry takes the key over: no request
 * runs longer than the slowest one, a test ping of ADS_WEBHOOK_TIMEOUT_MS, plus a margin.
 */
export const abandonedAfterMs = (webhookTimeoutMs: number) => webhookTimeoutMs + 60_000;
const KEY_RE = /^[\x21-\x7e]{1,255}$/;

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * The Idempotency-Key this request's run holds (as stored, in its account), and its claim token;
     * handlers pass it to the transaction that makes the change (src/db/commit-claim.ts).
     */
    idempotencyKey?: IdempotencyClaim;
  }
}

/**
 * What a key's request must repeat to be replayed: method, the path as sent (with its ids, so the
 * same key on `/users/A/invitation` and `/users/B/invitation` is a conflict) and query, and the
 * body's content (key order aside; the body depth is bounded by json-body.ts). An operation that
 * takes no body reads none, `null` and `{}` alike (docs/api.md "Requests"), so they are one request.
 */
const requestText = (request: FastifyRequest) => {
  const body = request.routeOptions.schema?.body === undefined ? null : (request.body ?? null);
  return `${request.method} ${request.url}\n${canonicalJson(body)}`;
};

/** Marks a keyed fingerprint; rows stored before it hold a bare SHA-256 in hex. */
const KEYED = 'k1.';

/**
 * The stored fingerprint: keyed with the secret key (SecretBox.mac), because the body may hold a
 * secret (a webhook's signing secret) and a bare hash of it, beside the URL and events stored in
 * clear, could be checked against guesses by anyone who reads the database.
 */
const fingerprint = (box: SecretBox, text: string) => KEYED + box.mac('idempotency fingerprint', text);

/**
 * The inner seal of a stored answer: a key derived from the secret key and the credential that
 * sent the request (its API key, or the invitation token of an acceptance), which the database
 * holds only as a hash. An answer may hold a new API key (`POST /api-keys`, an acceptance), and
 * decisions §3 has keys stored only as a hash: sealed under the secret key alone, anyone with the
 * database and `secret.key` (an `ads backup` holds both) could read it for 24 hours. Only the
 * caller, who could replay it anyway, can open it.
 */
export function answerBox(box: SecretBox, credential: string): SecretBox {
  return createSecretBox(Buffer.from(box.mac('idempotent answer', credential), 'base64url'));
}

/** Marks a stored answer whose body is sealed again under answerBox; older ones hold it in clear. */
const INNER_SEALED = 2;

/** The raw credential of each keyed request (see answerBox), kept off the claim handlers receive. */
const credentials = new WeakMap<FastifyRequest, string>();

/** Whether a stored fingerprint is this request's; a bare SHA-256 from before keyed ones still counts. */
function samePrint(stored: string, print: string, text: string): boolean {
  const theirs = Buffer.from(stored);
  const ours = Buffer.from(
    stored.startsWith(KEYED) ? print : createHash('sha256').update(text).digest('hex'),
  );
  return theirs.length === ours.length && timingSafeEqual(theirs, ours);
}

/** JSON with every object's keys sorted: the same body re-sent with its keys in another order matches. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/**
 * Where a request's Idempotency-Key is stored: in the account of the API key that sent it, under
 * that key's id, then the header's value (a space cannot occur in either). Each API key has its own
 * keys, so a response is replayed only to the key that caused it: another user of the account (or
 * a key of narrower scopes) sending the same header gets its own run, never the first caller's
 * answer, which may hold a secret such as a new API key. A route without a key names its own owner
 * (`config.idempotencyOwner`: the invitation's token for its acceptance); without one, no key.
 */
async function keyOwner(
  request: FastifyRequest,
): Promise<{ accountId: string; owner: string; credential: string } | null> {
  if (request.auth) {
    const credential = bearerToken(request);
    if (credential === null) return null;
    return { accountId: request.auth.accountId, owner: request.auth.keyId, credential };
  }
  return (await request.routeOptions.config.idempotencyOwner?.(request)) ?? null;
}

/**
 * Stripe-style `Idempotency-Key` on every POST (decisions §9): the first response (success or 4xx)
 * is stored sealed for 24 h and replayed with `Idempotent-Replayed: true`; the same key with another
 * body is `409 idempotency_conflict`; a concurrent duplicate waits for the first run and replays it.
 * A 400 or 5xx is not stored, so a retry runs again. Keys are scoped to the API key (keyOwner).
 */
export function installIdempotency(app: FastifyInstance) {
  const { database, clock, config } = app.ctx;
  const db = database.db;
  const box = secretBoxFor(config);

  // Callback hooks that hand over to the async work only for requests with an Idempotency-Key:
  // no promise per request otherwise.
  app.addHook('preHandler', (request, reply, done) => {
    if (
      request.method !== 'POST' ||
      request.headers['idempotency-key'] === undefined ||
      (!request.auth && request.routeOptions.config.idempotencyOwner === undefined) ||
      request.is404
    ) {
      return done();
    }
    // A replay is sent from inside `claim`; the hook chain then ends without done().
    claim(request, reply).then((replied) => {
      if (!replied) done();
    }, done);
  });
  app.addHook('onSend', (request, reply, payload, done) => {
    if (!request.idempotencyKey) return done(null, payload);
    complete(request, reply, payload).then((p) => done(null, p), done);
  });

  /** Claims the key for this request, or replays or refuses; true when a replay was sent. */
  async function claim(request: FastifyRequest, reply: FastifyReply): Promise<boolean> {
    const header = request.headers['idempotency-key'];
    const value = Array.isArray(header) ? header[0] : header;
    if (!value || !KEY_RE.test(value)) {
      throw new AppError('invalid_request', 'Idempotency-Key must be 1 to 255 visible ASCII characters.', {
        details: [{ field: 'Idempotency-Key', message: 'must be 1 to 255 visible ASCII characters' }],
      });
    }
    const owner = await keyOwner(request);
    if (owner === null) return false;
    const { accountId } = owner;
    const key = `${owner.owner} ${value}`;
    const text = requestText(request);
    const print = fingerprint(box, text);
    const deadline = Date.now() + WAIT_MS;
    for (;;) {
      const now = clock();
      const run = randomBytes(12).toString('base64url');
      const claimed = await claimIdempotencyKey(db, {
        account_id: accountId,
        key,
        fingerprint: print,
        status: 'running',
        response_status: null,
        sealed_response: null,
        created_at: new Date(now).toISOString(),
        claim: run,
      });
      if (claimed) {
        request.idempotencyKey = { accountId, key, claim: run };
        credentials.set(request, owner.credential);
        return false;
      }
      const row = await findIdempotencyKey(db, accountId, key);
      if (!row) continue;
      const age = now - new Date(row.created_at).getTime();
      const abandoned = row.status === 'running' && age > abandonedAfterMs(config.webhook.timeoutMs);
      const committed = Number(row.committed ?? 0) === 1;
      if (age > TTL_MS || (abandoned && !committed)) {
        // An abandoned run may yet commit (and mark its claim) between the read above and this
        // delete: only an uncommitted claim is released, and the next turn of the loop sees it.
        await releaseIdempotencyKey(db, row, { uncommitted: age <= TTL_MS });
        continue;
      }
      // Opened first: an answer sealed under another secret key has its fingerprint keyed under that
      // key too, so this process cannot tell whether it is this request, and says that one ran.
      const stored =
        row.status === 'done' && row.sealed_response !== null && row.response_status !== null
          ? {
              status: row.response_status,
              ...openStored(request, owner.credential, row.sealed_response, row.response_status),
            }
          : undefined;
      if (!samePrint(row.fingerprint, print, text)) {
        throw new AppError(
          'idempotency_conflict',
          'This Idempotency-Key was used with a different request; use a new key for a new request.',
        );
      }
      if (stored) {
        reply.code(stored.status).header('idempotent-replayed', 'true');
        if (stored.type) reply.type(stored.type);
        reply.send(stored.body === '' ? null : stored.body);
        return true;
      }
      if (abandoned && committed) {
        // Its change committed (commit-claim.ts) but its process stopped before the answer was
        // stored: running it again would act twice, so the key is spent without an answer.
        throw new AppError(
          'idempotency_conflict',
          'The request with this Idempotency-Key was carried out, but its answer was lost when the server stopped; it is not run again. Look the result up, or use a new key for a new request.',
        );
      }
      if (Date.now() > deadline) {
        throw new AppError(
          'idempotency_conflict',
          'A request with this Idempotency-Key is still in progress.',
        );
      }
      await sleep(25);
    }
  }

  /**
   * The stored answer, or a 409 when this process cannot read it: it was sealed under another
   * secret key (processes configured with different keys, or the key changed within 24 h). The
   * request did run, so running it again would act twice; the client is told its outcome's status
   * instead, and the operator gets an error line.
   */
  function openStored(
    request: FastifyRequest,
    credential: string,
    sealed: string,
    status: number,
  ): { body: string; type?: string } {
    try {
      const stored = JSON.parse(box.open(sealed)) as { v?: number; body: string; type?: string };
      if (stored.v !== INNER_SEALED) return stored;
      return { body: answerBox(box, credential).open(stored.body), type: stored.type };
    } catch (err) {
      request.log.error(
        { err: (err as Error).message },
        'cannot replay a stored idempotent answer: it was sealed under another secret key (ADS_SECRET_KEY)',
      );
      throw new AppError(
        'idempotency_conflict',
        `The request with this Idempotency-Key already ran (status ${status}), but this server cannot read its stored answer; look the result up, or use a new key for a new request.`,
      );
    }
  }

  async function complete(request: FastifyRequest, reply: FastifyReply, payload: unknown): Promise<unknown> {
    const held = request.idempotencyKey;
    if (!held) return payload;
    request.idempotencyKey = undefined;
    const { accountId, key, claim } = held;
    if (payload !== null && typeof payload !== 'string') {
      await releaseIdempotencyKey(db, { account_id: accountId, key, claim });
      return payload;
    }
    // A 400 refused the request before it did anything (validation, as Stripe does), and a 5xx
    // before its change committed did nothing either: the key stays usable for a retry. Other
    // answers, 4xx included, are kept, and so is a 5xx after the change committed (src/db/
    // commit-claim.ts): a retry must not act twice (Stripe, too, replays a 500 of a run that began).
    const failed = reply.statusCode >= 500 || reply.statusCode === 400;
    if (
      failed &&
      (await releaseIdempotencyKey(db, { account_id: accountId, key, claim }, { uncommitted: true }))
    ) {
      return payload;
    }
    const type = reply.getHeader('content-type');
    const credential = credentials.get(request);
    if (credential === undefined) throw new Error('idempotency: a claimed request without its credential');
    const sealed = box.seal(
      JSON.stringify({
        v: INNER_SEALED,
        body: answerBox(box, credential).seal(payload ?? ''),
        type: typeof type === 'string' ? type : undefined,
      }),
    );
    await completeIdempotencyKey(db, accountId, key, claim, reply.statusCode, sealed);
    return payload;
  }
}

/** How often each process deletes stored answers older than 24 h, and how many per statement. */
const PURGE_EVERY_MS = 10 * 60 * 1000;
const PURGE_BATCH = 1000;

/**
 * Deletes stored idempotent answers once they can no longer be replayed (24 h), so the table holds
 * about a day of POSTs rather than every POST ever. Runs in every process that runs workers; two
 * at once merely delete disjoint or already-deleted rows.
 */
export function createIdempotencyPurger(
  ctx: Pick<AppContext, 'database' | 'clock' | 'logger'>,
  opts: { everyMs?: number } = {},
): Worker & { purge(): Promise<number> } {
  const log = ctx.logger.child({ component: 'idempotency' });
  let stopped = false;
  let running: Promise<unknown> | null = null;
  const purge = async () => {
    const before = new Date(ctx.clock() - TTL_MS).toISOString();
    let total = 0;
    for (;;) {
      const n = await purgeIdempotencyKeys(ctx.database.db, before, PURGE_BATCH);
      total += n;
      if (n < PURGE_BATCH || stopped) return total;
    }
  };
  const timer = setInterval(() => {
    if (running) return;
    running = purge()
      .catch((err: unknown) => log.error({ err }, 'purging stored idempotent answers failed'))
      .finally(() => {
        running = null;
      });
  }, opts.everyMs ?? PURGE_EVERY_MS);
  timer.unref();
  return {
    name: 'idempotency-purge',
    purge,
    stop: async () => {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
