import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import { sql } from 'kysely';
import { type Completion, claimDueDeliveries, completeDeliveries } from '../../src/events/delivery-queue.ts';
import { describeEachDatabase, type TestAccount } from '../helpers/harness.ts';

const ts = (ms: number) => new Date(ms).toISOString();
const BASE = Date.parse('2026-01-01T00:00:00Z');

describeEachDatabase('delivery claims and outcomes under contention', (h) => {
  let a: TestAccount;
  let b: TestAccount;
  before(async () => {
    a = await h.account('enterprise');
    b = await h.account('enterprise');
  });

  const delivery = (
    accountId: string,
    id: string,
    webhookId: string,
    at: number,
    extra: { locked_until?: string; claim_token?: string } = {},
  ) => ({
    account_id: accountId,
    id,
    webhook_id: webhookId,
    event_id: 'evt',
    event_name: 'data.created',
    status: 'pending' as const,
    next_attempt_at: ts(at),
    created_at: ts(BASE),
    updated_at: ts(BASE),
    ...extra,
  });

  /**
   * `count` due deliveries of account a on webhook `hook` (one a millisecond from BASE), then one of
   * account b behind them; and the share of a worker with `busy` of a's 56 slots in flight.
   */
  const floodAndOneBehind = async (
    count: number,
    hook: string,
    prefix: string,
    behind: string,
    busy: number,
  ) => {
    const rows = Array.from({ length: count }, (_, i) =>
      delivery(a.id, `${prefix}${String(i).padStart(5, '0')}`, hook, BASE + i),
    );
    rows.push(delivery(b.id, behind, `wh_${behind}`, BASE + 5000));
    for (let i = 0; i < rows.length; i += 200) {
      await h.database.db
        .insertInto('webhook_deliveries')
        .values(rows.slice(i, i + 200))
        .execute();
    }
    return {
      perWebhook: 56,
      perAccount: 56,
      webhooks: new Map([[hook, busy]]),
      accounts: new Map([[a.id, busy]]),
    };
  };

  it("reaches another tenant's due delivery behind a flood, when the flooding tenant is one short of its share", async () => {
    // The worker has 55 of the flooding account's 56 slots busy, and 9 slots free.
    const share = await floodAndOneBehind(1000, 'wh_flood', 'flood', 'healthy', 55);
    const claimed = await h.database.db.transaction().execute((trx) =>
      claimDueDeliveries(trx, h.database.dialect, {
        now: ts(BASE + 10_000),
        leaseUntil: ts(BASE + 1e9),
        limit: 9,
        token: 'claim-1',
        share,
      }),
    );
    assert.deepEqual(claimed.map((c) => c.id).sort(), ['flood00000', 'healthy']);
    await sql`DELETE FROM webhook_deliveries WHERE account_id IN (${a.id}, ${b.id})`.execute(h.database.db);
  });

  it('without reach, scans only the window at the head: shares hold, nobody is left out, and no pass is timed', async () => {
    // The account at the head of the queue has its whole share in flight; 8 slots are free.
    const share = await floodAndOneBehind(300, 'wh_head', 'head', 'behind', 56);
    const claim = (token: string, reach: boolean, passes: number[]) =>
      h.database.db.transaction().execute((trx) =>
        claimDueDeliveries(trx, h.database.dialect, {
          now: ts(BASE + 10_000),
          leaseUntil: ts(BASE + 1e9),
          limit: 8,
          token,
          share,
          reach,
          onLeftOut: (ms) => passes.push(ms),
        }),
      );
    // The window (the first 64 due rows) holds only the full account's rows: nothing to take.
    const unreached: number[] = [];
    assert.deepEqual(await claim('claim-1', false, unreached), []);
    assert.deepEqual(unreached, [], 'no pass left anyone out');
    // Reaching leaves the full account out and finds the row behind its 300, in one timed pass.
    const reached: number[] = [];
    const got = await claim('claim-2', true, reached);
    assert.deepEqual(
      got.map((c) => c.id),
      ['behind'],
    );
    assert.equal(reached.length, 1);
    assert.ok(reached[0]! >= 0);
    await sql`DELETE FROM webhook_deliveries WHERE account_id IN (${a.id}, ${b.id})`.execute(h.database.db);
  });

  it('writes outcomes that retry and that disable one webhook from two transactions at once', async () => {
    const now = Date.now();
    for (let round = 0; round < 10; round++) {
      const hook = `wh_race${round}`;
      await sql`INSERT INTO webhooks (account_id, id, url, events, status, created_at, updated_at)
        VALUES (${a.id}, ${hook}, 'https://example.com/hook', '["*"]', 'active', ${ts(now)}, ${ts(now)})`.execute(
        h.database.db,
      );
      const ds = [0, 1, 2, 3].map((i) =>
        delivery(a.id, `race${round}-${i}`, hook, now + 1e6, {
          locked_until: ts(now + 1e6),
          claim_token: `t${i}`,
        }),
      );
      await h.database.db.insertInto('webhook_deliveries').values(ds).execute();
      const attempt = { at: ts(now), status_code: 500, duration_ms: 1, error: 'receiver answered 500' };
      const completion = (d: (typeof ds)[number], disable: boolean): Completion => ({
        claim: {
          ...d,
          attempt_count: 0,
          retries_used: disable ? 5 : 0,
          manual: 0,
          claim_token: d.claim_token ?? '',
        },
        now: ts(now),
        outcome: disable
          ? {
              status: 'failed',
              nextAttemptAt: null,
              retriesUsed: 5,
              attempt,
              disable: 'failed after 6 attempts',
            }
          : { status: 'pending', nextAttemptAt: ts(now + 60_000), retriesUsed: 1, attempt },
      });
      const results = await Promise.allSettled([
        completeDeliveries(h.database.db, h.database.dialect, [
          completion(ds[0]!, false),
          completion(ds[1]!, true),
        ]),
        completeDeliveries(h.database.db, h.database.dialect, [
          completion(ds[2]!, false),
          completion(ds[3]!, true),
        ]),
      ]);
      for (const r of results)
        assert.equal(r.status, 'fulfilled', `round ${round}: ${String((r as PromiseRejectedResult).reason)}`);
      const left = await h.database.db
        .selectFrom('webhook_deliveries')
        .select('status')
        .where('webhook_id', '=', hook)
        .execute();
      assert.deepEqual(
        left.map((d) => d.status),
        ['failed', 'failed', 'failed', 'failed'],
        'the webhook is disabled: none waits for a retry',
      );
    }
  });
});
