import { type Kysely, sql } from 'kysely';
import type { DB, Db, Dialect } from '../db/types.ts';
import { disableWebhook } from '../modules/webhooks/repo.ts';

/** A delivery a worker holds the lease on; `claim_token` proves it when the outcome is written. */
export interface ClaimedDelivery {
  account_id: string;
  id: string;
  webhook_id: string;
  event_id: string;
  event_name: string;
  attempt_count: number;
  retries_used: number;
  manual: number;
  claim_token: string;
}

const RETURNING = sql`account_id, id, webhook_id, event_id, event_name, attempt_count, retries_used, manual, claim_token`;

/** `key` of an account's webhook or delivery in the maps below. */
const keyOf = (accountId: string, id: string) => `${accountId}\u0000${id}`;

type Column = 'text' | 'integer' | 'timestamptz';

/**
 * `rows` as a relation read from one JSON parameter: the statement's text is the same whatever the
 * number of rows, so SQLite's statement cache (src/db/sqlite.ts) keeps one entry for it, where a
 * VALUES list of one row per item would add one per batch size and push other statements out.
 * Each row travels as a JSON array of its values in `columns` order. PostgreSQL casts each to its
 * column's type; on SQLite `->>` gives JSON strings as text, numbers as integers and null as NULL,
 * as the columns store them.
 */
function jsonRows(
  dialect: Dialect,
  columns: Record<string, Column>,
  rows: readonly Record<string, unknown>[],
) {
  const names = Object.keys(columns);
  const json = JSON.stringify(rows.map((r) => names.map((n) => r[n] ?? null)));
  return dialect === 'postgres'
    ? sql`(select ${sql.raw(names.map((n, i) => `cast(r->>${i} as ${columns[n]}) as ${n}`).join(', '))}
        from json_array_elements(cast(${json} as json)) as r)`
    : sql`(select ${sql.raw(names.map((n, i) => `value ->> ${i} as ${n}`).join(', '))} from json_each(${json}))`;
}

/**
 * `(account_id, id) in (…)`: rows by their keys in one statement of one shape whatever their
 * number, found by primary key on both databases (an OR of one AND per key took PostgreSQL 3.5 ms
 * to plan and run for 64 keys, docs/benchmarks.md "Webhooks").
 */
const keysIn = (dialect: Dialect, pairs: readonly (readonly [string, string])[]) =>
  sql<boolean>`(account_id, id) in (select k.account_id, k.id from ${jsonRows(
    dialect,
    { account_id: 'text', id: 'text' },
    pairs.map(([account_id, id]) => ({ account_id, id })),
  )} as k)`;

/** Key pairs without repeats. */
const distinct = (pairs: readonly (readonly [string, string])[]) => [
  ...new Map(pairs.map((p) => [keyOf(p[0], p[1]), p])).values(),
];

/**
 * What this worker already has in flight, so a claim keeps any one webhook, and any one account,
 * from taking every slot: attempts per webhook id and per account id, and the caps on each.
 */
export interface InFlightShare {
  perWebhook: number;
  perAccount: number;
  webhooks: ReadonlyMap<string, number>;
  accounts: ReadonlyMap<string, number>;
}

/** Ids from a share map at or over `cap` (left out of a claim), and the others with their counts. */
function split(map: ReadonlyMap<string, number>, cap: number) {
  const entries = [...map];
  return {
    full: entries.filter(([, n]) => n >= cap).map(([id]) => id),
    busy: entries.filter(([, n]) => n < cap),
  };
}

/** `(id, n)` rows as a VALUES list (a never-matching row when empty, so the SQL stays one shape). */
const valuesOf = (rows: readonly [string, number][]) =>
  rows.length === 0
    ? sql`values ('', cast(0 as integer))`
    : sql`values ${sql.join(rows.map(([id, n]) => sql`(${id}, cast(${n} as integer))`))}`;

/** What {@link claimDueDeliveries} takes. */
export interface ClaimOptions {
  now: string;
  leaseUntil: string;
  limit: number;
  token: string;
  share?: InFlightShare;
  /** Whether a pass may leave those at their share out of its scan (default true). */
  reach?: boolean;
  /** Hears how long each pass that left someone out took, in milliseconds. */
  onLeftOut?: (ms: number) => void;
}

/**
 * Atomically claims up to `limit` due deliveries for one worker, oldest due first, but fairly: no
 * webhook gets more than `share.perWebhook` attempts in flight in this worker, nor an account more
 * than `share.perAccount`, counting those already running. A tenant whose receivers hang (every
 * attempt runs to the deadline) or who floods its webhooks therefore holds only its share of the
 * slots, and other tenants' deliveries still go out at once. Those over their share are left out
 * of the scan (so it reaches the others' rows behind theirs); among the next `limit` × 4 due rows,
 * the ones past a webhook's or account's remaining share wait for the next claim.
 * Leaving someone out is not bounded: the scan walks every due row of theirs to get past them
 * (on SQLite, where the claim holds the write lock, about 5 ms for 100,000 such rows read from the
 * covering due index of migration 0024, 7-11 ms before it), so a worker asks for it (`reach`, the
 * default) only now and then. With `reach: false` one pass scans the first `limit` × 4 due rows
 * and nobody is left out; rows behind that window wait for a claim that reaches.
 * The claim moves next_attempt_at to the end of the lease, so a worker that dies mid-attempt leaves
 * a delivery that falls due again when its lease runs out. PostgreSQL: FOR UPDATE SKIP LOCKED, so
 * concurrent workers take disjoint rows without waiting. SQLite: a single UPDATE … RETURNING,
 * serialised by the database's write lock. `status = 'pending'` is literal SQL so both planners use
 * the partial due index.
 */
export async function claimDueDeliveries(
  db: Db,
  dialect: Dialect,
  opts: ClaimOptions,
): Promise<ClaimedDelivery[]> {
  const share = opts.share ?? {
    perWebhook: opts.limit,
    perAccount: opts.limit,
    webhooks: new Map<string, number>(),
    accounts: new Map<string, number>(),
  };
  // One pass can find its scan full of a single tenant's rows and take only the few that tenant
  // still had room for; once a pass fills someone's share, the next leaves them out of the scan
  // and reaches the others' rows behind theirs. Three passes at most.
  const webhooks = new Map(share.webhooks);
  const accounts = new Map(share.accounts);
  const claimed: ClaimedDelivery[] = [];
  const reach = opts.reach !== false;
  const atShare = () =>
    [...webhooks.values()].some((n) => n >= share.perWebhook) ||
    [...accounts.values()].some((n) => n >= share.perAccount);
  for (let pass = 0; pass < (reach ? 3 : 1) && claimed.length < opts.limit; pass++) {
    const leavesOut = reach && atShare();
    const started = performance.now();
    const rows = await claimPass(
      db,
      dialect,
      { ...opts, limit: opts.limit - claimed.length, reach },
      {
        ...share,
        webhooks,
        accounts,
      },
    );
    if (leavesOut) opts.onLeftOut?.(performance.now() - started);
    claimed.push(...rows);
    let filled = false;
    for (const r of rows) {
      const w = (webhooks.get(r.webhook_id) ?? 0) + 1;
      const a = (accounts.get(r.account_id) ?? 0) + 1;
      webhooks.set(r.webhook_id, w);
      accounts.set(r.account_id, a);
      if (w >= share.perWebhook || a >= share.perAccount) filled = true;
    }
    if (rows.length === 0 || !filled) break;
  }
  return claimed;
}

/**
 * The statement of one claim pass (exported for the test of its plan). On SQLite its LIMITs are
 * written `+?`: a bare `limit ?` makes SQLite compile the bound value into the program and so parse
 * and plan the statement again every time it runs (docs/benchmarks.md, "Webhooks"); the plans are
 * the same (the scan walks the due index in order, the last sort keeps its top rows either way).
 */
export function claimStatement(
  dialect: Dialect,
  opts: { now: string; leaseUntil: string; limit: number; token: string; reach?: boolean },
  share: InFlightShare,
) {
  const { now, leaseUntil, limit, token } = opts;
  // Without `reach`, nobody is left out of the scan: the ranking counts everyone's attempts in
  // flight, so the rows of those at their share are passed over inside the window instead.
  const parts = (map: ReadonlyMap<string, number>, cap: number) =>
    opts.reach === false ? { full: [], busy: [...map] } : split(map, cap);
  const hooks = parts(share.webhooks, share.perWebhook);
  const accounts = parts(share.accounts, share.perAccount);
  const notFull = sql.join(
    [
      sql`status = 'pending' and next_attempt_at <= ${now}`,
      ...(hooks.full.length ? [sql`webhook_id not in (${sql.join(hooks.full)})`] : []),
      ...(accounts.full.length ? [sql`account_id not in (${sql.join(accounts.full)})`] : []),
    ],
    sql` and `,
  );
  const scan = Math.max(limit * 4, 64);
  const bound = (n: number) => (dialect === 'sqlite' ? sql`+${n}` : sql`${n}`);
  // Each due row's rank within its webhook and within its account, plus what those already have
  // in flight here: a row is taken only while both stay within their share.
  const fair = (due: ReturnType<typeof sql>) => sql`
    select r.account_id, r.id, r.next_attempt_at from (
      select due.account_id, due.id, due.next_attempt_at,
        row_number() over (partition by due.webhook_id order by due.next_attempt_at, due.id)
          + coalesce(bw.n, 0) as hook_rank,
        row_number() over (partition by due.account_id order by due.next_attempt_at, due.id)
          + coalesce(ba.n, 0) as account_rank
      from ${due} due
      left join (select column1 as id, column2 as n from (${valuesOf(hooks.busy)}) as v) as bw
        on bw.id = due.webhook_id
      left join (select column1 as id, column2 as n from (${valuesOf(accounts.busy)}) as v) as ba
        on ba.id = due.account_id
    ) r
    where r.hook_rank <= ${share.perWebhook} and r.account_rank <= ${share.perAccount}
    order by r.next_attempt_at
    limit ${bound(limit)}`;
  return dialect === 'postgres'
    ? sql<ClaimedDelivery>`
          with due as (
            select account_id, id, webhook_id, next_attempt_at from webhook_deliveries
            where ${notFull}
            order by next_attempt_at
            limit ${scan}
            for update skip locked
          ), picked as (${fair(sql`due`)})
          update webhook_deliveries d
          set locked_until = ${leaseUntil}, next_attempt_at = ${leaseUntil}, claim_token = ${token}
          from picked where d.account_id = picked.account_id and d.id = picked.id
          returning d.account_id, d.id, d.webhook_id, d.event_id, d.event_name, d.attempt_count,
            d.retries_used, d.manual, d.claim_token`
    : sql<ClaimedDelivery>`
          update webhook_deliveries
          set locked_until = ${leaseUntil}, next_attempt_at = ${leaseUntil}, claim_token = ${token}
          where (account_id, id) in (
            select account_id, id from (${fair(sql`(
              select account_id, id, webhook_id, next_attempt_at from webhook_deliveries
              where ${notFull}
              order by next_attempt_at
              limit ${bound(scan)}
            )`)})
          )
          returning ${RETURNING}`;
}

/** One claim query: {@link claimDueDeliveries} with the shares as they stand. */
async function claimPass(
  db: Db,
  dialect: Dialect,
  opts: { now: string; leaseUntil: string; limit: number; token: string; reach: boolean },
  share: InFlightShare,
): Promise<ClaimedDelivery[]> {
  const query = claimStatement(dialect, opts, share);
  const { rows } = await query.execute(db);
  return rows.map((r) => ({
    ...r,
    attempt_count: Number(r.attempt_count),
    retries_used: Number(r.retries_used),
    manual: Number(r.manual),
  }));
}

/**
 * Claims due deliveries and reads what sending them needs, in one transaction (one commit). Outcomes
 * of finished attempts ride along (`completions`, written first), so a busy worker commits once per
 * round instead of once for its outcomes and once for its next claim.
 */
export async function claimWithTargets(
  db: Kysely<DB>,
  dialect: Dialect,
  opts: ClaimOptions,
  completions: readonly Completion[] = [],
) {
  return db.transaction().execute(async (trx) => {
    const written = await applyAll(trx, dialect, completions);
    const claimed = await claimDueDeliveries(trx, dialect, opts);
    return { written, claimed, targets: await loadTargets(trx, dialect, claimed) };
  });
}

/**
 * Gives back deliveries this worker claimed but will not attempt (it is stopping): due again at
 * `now`, for another worker, instead of after their lease. A delivery that changed hands meanwhile
 * (its claim token differs) is left alone.
 */
export async function releaseClaims(
  db: Kysely<DB>,
  claimed: readonly ClaimedDelivery[],
  now: string,
): Promise<void> {
  if (claimed.length === 0) return;
  await db.transaction().execute(async (trx) => {
    for (const c of claimed) {
      await trx
        .updateTable('webhook_deliveries')
        .set({ next_attempt_at: now, locked_until: null, claim_token: null })
        .where('account_id', '=', c.account_id)
        .where('id', '=', c.id)
        .where('status', '=', 'pending')
        .where('claim_token', '=', c.claim_token)
        .execute();
    }
  });
}

/** The earliest time any pending delivery falls due (a lease end counts), or null when none waits. */
export async function nextDueAt(db: Kysely<DB>): Promise<string | null> {
  const { rows } = await sql<{
    next: string | Date | null;
  }>`select min(next_attempt_at) as next from webhook_deliveries where status = 'pending'`.execute(db);
  const next = rows[0]?.next ?? null;
  return next instanceof Date ? next.toISOString() : next;
}

/** The webhook and event payload a claimed delivery needs; missing parts come back undefined. */
export async function loadTargets(db: Db, dialect: Dialect, claimed: readonly ClaimedDelivery[]) {
  if (claimed.length === 0) return { hooks: new Map(), payloads: new Map() };
  const [hooks, events] = await Promise.all([
    db
      .selectFrom('webhooks')
      .select(['account_id', 'id', 'url', 'sealed_secret', 'status'])
      .where(keysIn(dialect, distinct(claimed.map((c) => [c.account_id, c.webhook_id] as const))))
      .execute(),
    db
      .selectFrom('events')
      .select(['account_id', 'id', 'payload'])
      .where(keysIn(dialect, distinct(claimed.map((c) => [c.account_id, c.event_id] as const))))
      .execute(),
  ]);
  return {
    hooks: new Map(hooks.map((h) => [`${h.account_id}/${h.id}`, h])),
    payloads: new Map(events.map((e) => [`${e.account_id}/${e.id}`, e.payload])),
  };
}

/** The outcome of one attempt, written under the claim. */
export interface AttemptOutcome {
  status: 'pending' | 'succeeded' | 'failed';
  nextAttemptAt: string | null;
  retriesUsed: number;
  attempt: { at: string; status_code: number | null; duration_ms: number; error: string | null } | null;
  /** Disable the webhook (and fail its waiting deliveries) for this reason. */
  disable?: string;
  /**
   * The URL the attempt went to: the webhook is disabled only while it still points there. One
   * PATCHed to a new URL during the attempt is not disabled for what its old receiver answered.
   */
  url?: string;
}

/** One finished claim: the outcome to write and when it was decided. */
export interface Completion {
  claim: ClaimedDelivery;
  outcome: AttemptOutcome;
  now: string;
}

/**
 * Writes one set of outcomes whose deliveries are distinct: one UPDATE for all of them, each only
 * while its claim token still holds. Returns the keys of the rows it wrote.
 */
async function updateDeliveries(
  trx: Db,
  dialect: Dialect,
  rows: readonly { claim: ClaimedDelivery; outcome: AttemptOutcome; now: string }[],
): Promise<Set<string>> {
  const v = jsonRows(
    dialect,
    {
      account_id: 'text',
      id: 'text',
      claim_token: 'text',
      status: 'text',
      attempt_count: 'integer',
      retries_used: 'integer',
      next_attempt_at: 'timestamptz',
      updated_at: 'timestamptz',
    },
    rows.map(({ claim: c, outcome: o, now }) => ({
      account_id: c.account_id,
      id: c.id,
      claim_token: c.claim_token,
      status: o.status,
      attempt_count: c.attempt_count + (o.attempt ? 1 : 0),
      retries_used: o.retriesUsed,
      next_attempt_at: o.nextAttemptAt,
      updated_at: now,
    })),
  );
  // SQLite's RETURNING names only the updated table; PostgreSQL's needs the alias (v has the same
  // column names).
  const { rows: updated } = await sql<{ account_id: string; id: string }>`
    update webhook_deliveries as d
    set status = v.status, attempt_count = v.attempt_count, retries_used = v.retries_used, manual = 0,
      next_attempt_at = v.next_attempt_at, locked_until = null, claim_token = null,
      updated_at = v.updated_at
    from ${v} as v
    where d.account_id = v.account_id and d.id = v.id and d.claim_token = v.claim_token
    returning ${dialect === 'postgres' ? sql`d.account_id, d.id` : sql`account_id, id`}`.execute(trx);
  return new Set(updated.map((r) => keyOf(r.account_id, r.id)));
}

/**
 * Writes outcomes set-wise: three statements of one shape for the whole batch whatever its size
 * (the rows travel as one JSON parameter, jsonRows; on SQLite a batch without a retry or a disable
 * skips the first, having no webhook to check), where one UPDATE and one INSERT per outcome
 * made the PostgreSQL worker's round trips outweigh its sends (docs/benchmarks.md, "Webhooks").
 * Each is written only while its claim still holds. Results come back in the order of `items`.
 *
 * Locks: the webhooks an outcome may change (a retry to check, a webhook to disable) are locked
 * first, all in one statement in key order, so two transactions never wait on each other's
 * webhooks in a cycle, and the disables at the end touch only webhooks locked already. A webhook
 * disabled meanwhile (another delivery's 410, say) turns a retry into a failure: its delivery,
 * still claimed, was not among the waiting ones that disable failed. On PostgreSQL the row lock
 * makes a disable committing meanwhile wait for this transaction, which then fails this row
 * itself. Exclusive, not shared: two transactions each sharing it and then both disabling the
 * webhook would deadlock.
 *
 * On PostgreSQL a batch of successes and failures (no webhook to check or disable) still locks its
 * webhooks, FOR KEY SHARE, which only a deletion of the webhook waits for (and waits behind): a
 * deletion (deleteWebhook: the webhook row first, then its attempts and deliveries) therefore runs
 * wholly before or wholly after this transaction. Without it, a deletion could read the attempts
 * to remove before this transaction's insert committed and then delete the delivery after it,
 * leaving an attempt row whose delivery is gone; or wait on one of this batch's deliveries while
 * this batch waited on another it had already locked (a deadlock, one side's 500 or lost batch).
 * SQLite serialises write transactions and needs no lock.
 */
async function applyAll(trx: Db, dialect: Dialect, items: readonly Completion[]): Promise<boolean[]> {
  const written = new Array<boolean>(items.length).fill(false);
  if (items.length === 0) return written;
  const checked = (o: AttemptOutcome) => o.status === 'pending' || o.disable !== undefined;
  const exclusive = items.some(({ outcome }) => checked(outcome));
  const hookKeys = new Map<string, readonly [string, string]>();
  for (const { claim: c, outcome: o } of items) {
    if (dialect === 'postgres' || checked(o))
      hookKeys.set(keyOf(c.account_id, c.webhook_id), [c.account_id, c.webhook_id]);
  }
  const disabled = new Set<string>();
  if (hookKeys.size > 0) {
    const hooks = await trx
      .selectFrom('webhooks')
      .select(['account_id', 'id', 'status'])
      .where(keysIn(dialect, [...hookKeys.values()]))
      .orderBy('account_id')
      .orderBy('id')
      .$if(dialect === 'postgres', (q) => (exclusive ? q.forUpdate() : q.forKeyShare()))
      .execute();
    for (const h of hooks) if (h.status === 'disabled') disabled.add(keyOf(h.account_id, h.id));
  }
  const decided = items.map((item) =>
    item.outcome.status === 'pending' && disabled.has(keyOf(item.claim.account_id, item.claim.webhook_id))
      ? { ...item, outcome: { ...item.outcome, status: 'failed' as const, nextAttemptAt: null } }
      : item,
  );
  // One UPDATE writes each delivery once; the same delivery twice in a batch (never from one
  // worker: a lease outlasts its attempt) goes in a later round, so each claim token is checked.
  let left = decided.map((item, i) => ({ item, i, key: keyOf(item.claim.account_id, item.claim.id) }));
  while (left.length > 0) {
    const seen = new Set<string>();
    const round: typeof left = [];
    const later: typeof left = [];
    for (const entry of left) {
      if (seen.has(entry.key)) later.push(entry);
      else {
        seen.add(entry.key);
        round.push(entry);
      }
    }
    const updated = await updateDeliveries(
      trx,
      dialect,
      round.map((e) => e.item),
    );
    for (const e of round) written[e.i] = updated.has(e.key);
    left = later;
  }
  const attempts = decided.flatMap(({ claim: c, outcome: o }, i) =>
    written[i] && o.attempt
      ? [{ account_id: c.account_id, delivery_id: c.id, attempt: c.attempt_count + 1, ...o.attempt }]
      : [],
  );
  if (attempts.length > 0) {
    const rows = jsonRows(
      dialect,
      {
        account_id: 'text',
        delivery_id: 'text',
        attempt: 'integer',
        at: 'timestamptz',
        status_code: 'integer',
        duration_ms: 'integer',
        error: 'text',
      },
      attempts,
    );
    await sql`insert into webhook_attempts (account_id, delivery_id, attempt, at, status_code, duration_ms, error)
      select account_id, delivery_id, attempt, at, status_code, duration_ms, error from ${rows} as a`.execute(
      trx,
    );
  }
  for (const [i, { claim: c, outcome: o, now }] of decided.entries()) {
    if (written[i] && o.disable) await disableWebhook(trx, c.account_id, c.webhook_id, o.disable, now, o.url);
  }
  return written;
}

/**
 * Records attempts and their deliveries' next states, several in one transaction (one commit, one
 * fsync), each only while its claim still holds: a lease taken over by another worker, or a deleted
 * webhook, makes that one a no-op (false).
 */
export async function completeDeliveries(
  db: Kysely<DB>,
  dialect: Dialect,
  items: readonly Completion[],
): Promise<boolean[]> {
  return db.transaction().execute((trx) => applyAll(trx, dialect, items));
}

/** Removes a claimed delivery whose webhook is gone (fanned out while it was being deleted). */
export async function dropOrphan(db: Kysely<DB>, c: ClaimedDelivery): Promise<void> {
  await db
    .deleteFrom('webhook_deliveries')
    .where('account_id', '=', c.account_id)
    .where('id', '=', c.id)
    .where('claim_token', '=', c.claim_token)
    .execute();
}
