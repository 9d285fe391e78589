import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import type { Kysely, KyselyPlugin, PluginTransformQueryArgs, PluginTransformResultArgs } from 'kysely';
import { sql } from 'kysely';
import type { DB } from '../../src/db/types.ts';
import { type AttemptOutcome, type Completion, completeDeliveries } from '../../src/events/delivery-queue.ts';
import { requeueDelivery } from '../../src/modules/webhooks/repo.ts';
import { describeEachDatabase, type TestAccount } from '../helpers/harness.ts';

const ts = (ms: number) => new Date(ms).toISOString();
const NOW = Date.parse('2026-03-01T00:00:00Z');

/** Records the SQL of each statement a Kysely instance (and its transactions) runs. */
class RecordStatements implements KyselyPlugin {
  readonly sql: string[] = [];
  constructor(private readonly db: Kysely<DB>) {}
  transformQuery(args: PluginTransformQueryArgs) {
    this.sql.push(this.db.getExecutor().compileQuery(args.node, args.queryId).sql);
    return args.node;
  }
  async transformResult(args: PluginTransformResultArgs) {
    return args.result;
  }
}

describeEachDatabase('webhook outcomes written as one batch', (h) => {
  let a: TestAccount;
  before(async () => {
    a = await h.account('enterprise');
  });

  const hook = async (id: string, status: 'active' | 'disabled') => {
    await sql`INSERT INTO webhooks (account_id, id, url, events, status, created_at, updated_at)
      VALUES (${a.id}, ${id}, 'https://example.com/hook', '["*"]', ${status}, ${ts(NOW)}, ${ts(NOW)})`.execute(
      h.database.db,
    );
  };
  /** A pending delivery; claimed (leased, with `token`) unless token is null. */
  const delivery = async (id: string, webhookId: string, token: string | null, attemptCount = 0) => {
    await h.database.db
      .insertInto('webhook_deliveries')
      .values({
        account_id: a.id,
        id,
        webhook_id: webhookId,
        event_id: 'evt',
        event_name: 'data.created',
        status: 'pending',
        attempt_count: attemptCount,
        next_attempt_at: ts(NOW + (token ? 3_600_000 : 0)),
        locked_until: token ? ts(NOW + 3_600_000) : null,
        claim_token: token,
        created_at: ts(NOW),
        updated_at: ts(NOW),
      })
      .execute();
  };
  const attempt = (code: number) => ({
    at: ts(NOW),
    status_code: code,
    duration_ms: 3,
    error: code < 300 ? null : `receiver answered ${code}`,
  });
  const done = (
    id: string,
    webhookId: string,
    token: string,
    outcome: AttemptOutcome,
    attemptCount = 0,
  ): Completion => ({
    claim: {
      account_id: a.id,
      id,
      webhook_id: webhookId,
      event_id: 'evt',
      event_name: 'data.created',
      attempt_count: attemptCount,
      retries_used: 0,
      manual: 0,
      claim_token: token,
    },
    outcome,
    now: ts(NOW + 1000),
  });
  const success = (code: number): AttemptOutcome => ({
    status: 'succeeded',
    nextAttemptAt: null,
    retriesUsed: 0,
    attempt: attempt(code),
  });
  const retry = (code: number): AttemptOutcome => ({
    status: 'pending',
    nextAttemptAt: ts(NOW + 60_000),
    retriesUsed: 1,
    attempt: attempt(code),
  });
  const rowsOf = async (ids: string[]) => {
    const rows = await h.database.db
      .selectFrom('webhook_deliveries')
      .select([
        'id',
        'status',
        'attempt_count',
        'retries_used',
        'next_attempt_at',
        'locked_until',
        'claim_token',
      ])
      .where('account_id', '=', a.id)
      .where('id', 'in', ids)
      .execute();
    const iso = (v: unknown) => (v instanceof Date ? v.toISOString() : (v as string | null));
    return Object.fromEntries(
      rows.map((r) => [
        r.id,
        {
          status: r.status,
          attempts: Number(r.attempt_count),
          retries: Number(r.retries_used),
          next: iso(r.next_attempt_at),
          leased: r.locked_until !== null || r.claim_token !== null,
        },
      ]),
    );
  };
  const attemptsOf = async (ids: string[]) =>
    (
      await h.database.db
        .selectFrom('webhook_attempts')
        .select(['delivery_id', 'attempt', 'status_code'])
        .where('account_id', '=', a.id)
        .where('delivery_id', 'in', ids)
        .orderBy('delivery_id')
        .orderBy('attempt')
        .execute()
    ).map((r) => `${r.delivery_id}#${Number(r.attempt)}:${r.status_code}`);

  it('writes every kind of outcome in one call, each as it would be alone', async () => {
    await hook('wh_ok', 'active');
    await hook('wh_gone', 'disabled'); // disabled while its delivery was in flight
    await hook('wh_410', 'active');
    await delivery('ok', 'wh_ok', 't-ok');
    await delivery('again', 'wh_ok', 't-again', 2);
    await delivery('late', 'wh_gone', 't-late');
    await delivery('gone', 'wh_410', 't-gone');
    await delivery('beside', 'wh_410', 't-beside');
    await delivery('waiting', 'wh_410', null);
    await delivery('stale', 'wh_ok', 't-taken-over');
    await delivery('unsent', 'wh_ok', 't-unsent');
    await delivery('twice', 'wh_ok', 't-new');
    const written = await completeDeliveries(h.database.db, h.database.dialect, [
      done('ok', 'wh_ok', 't-ok', success(204)),
      done('again', 'wh_ok', 't-again', retry(503), 2),
      done('late', 'wh_gone', 't-late', retry(500)),
      done('beside', 'wh_410', 't-beside', retry(502)),
      done('gone', 'wh_410', 't-gone', {
        status: 'failed',
        nextAttemptAt: null,
        retriesUsed: 0,
        attempt: attempt(410),
        disable: 'receiver answered 410 Gone',
      }),
      done('stale', 'wh_ok', 't-stale', retry(500)),
      done('unsent', 'wh_ok', 't-unsent', {
        status: 'failed',
        nextAttemptAt: null,
        retriesUsed: 0,
        attempt: null,
      }),
      done('twice', 'wh_ok', 't-old', retry(500)),
      done('twice', 'wh_ok', 't-new', success(200)),
    ]);
    assert.deepEqual(written, [true, true, true, true, true, false, true, false, true]);
    const ids = ['ok', 'again', 'late', 'gone', 'beside', 'waiting', 'stale', 'unsent', 'twice'];
    const claimed = { next: ts(NOW + 3_600_000), leased: true };
    assert.deepEqual(await rowsOf(ids), {
      ok: { status: 'succeeded', attempts: 1, retries: 0, next: null, leased: false },
      again: { status: 'pending', attempts: 3, retries: 1, next: ts(NOW + 60_000), leased: false },
      // A retry on a webhook disabled meanwhile fails instead.
      late: { status: 'failed', attempts: 1, retries: 1, next: null, leased: false },
      gone: { status: 'failed', attempts: 1, retries: 0, next: null, leased: false },
      // Retried in the same batch as the 410 that disables its webhook: failed by that disable.
      beside: { status: 'failed', attempts: 1, retries: 1, next: null, leased: false },
      waiting: { status: 'failed', attempts: 0, retries: 0, next: null, leased: false },
      // Another claim holds it: untouched.
      stale: { status: 'pending', attempts: 0, retries: 0, ...claimed },
      unsent: { status: 'failed', attempts: 0, retries: 0, next: null, leased: false },
      twice: { status: 'succeeded', attempts: 1, retries: 0, next: null, leased: false },
    });
    assert.deepEqual(await attemptsOf(ids), [
      'again#3:503',
      'beside#1:502',
      'gone#1:410',
      'late#1:500',
      'ok#1:204',
      'twice#1:200',
    ]);
    const hooks = await h.database.db
      .selectFrom('webhooks')
      .select(['id', 'status', 'disabled_reason'])
      .where('account_id', '=', a.id)
      .where('id', 'in', ['wh_ok', 'wh_410'])
      .orderBy('id')
      .execute();
    assert.deepEqual(hooks, [
      { id: 'wh_410', status: 'disabled', disabled_reason: 'receiver answered 410 Gone' },
      { id: 'wh_ok', status: 'active', disabled_reason: null },
    ]);
  });

  it('writes a batch of outcomes in three statements whose text does not depend on its size', async () => {
    await hook('wh_many', 'active');
    /** Completes `n` fresh claimed deliveries (half succeeded, half retried) and returns the SQL run. */
    const batch = async (prefix: string, n: number) => {
      const ids = Array.from({ length: n }, (_, i) => `${prefix}${String(i).padStart(2, '0')}`);
      for (const id of ids) await delivery(id, 'wh_many', `t-${id}`);
      const recorder = new RecordStatements(h.database.db);
      const written = await completeDeliveries(
        h.database.db.withPlugin(recorder),
        h.database.dialect,
        ids.map((id, i) => done(id, 'wh_many', `t-${id}`, i % 2 === 0 ? success(200) : retry(500))),
      );
      assert.deepEqual(
        written,
        ids.map(() => true),
      );
      const rows = await rowsOf(ids);
      assert.equal(Object.values(rows).filter((r) => r.status === 'succeeded').length, n / 2);
      assert.equal(Object.values(rows).filter((r) => r.status === 'pending' && !r.leased).length, n / 2);
      assert.equal((await attemptsOf(ids)).length, n);
      return recorder.sql;
    };
    const many = await batch('many', 40);
    // The webhooks to check, the deliveries, the attempts: three, where one UPDATE and one INSERT
    // per outcome (and a SELECT per retry) made 100.
    assert.equal(many.length, 3);
    // The same three texts for 4 outcomes as for 40: SQLite's statement cache keeps one entry each.
    assert.deepEqual(await batch('few', 4), many);
  });

  it('writes nothing for an attempt that outlived its lease once the delivery was requeued by hand', async () => {
    await hook('wh_requeue', 'active');
    await delivery('expired', 'wh_requeue', 't-expired');
    await h.database.db
      .updateTable('webhook_deliveries')
      .set({ locked_until: ts(NOW - 1000), next_attempt_at: ts(NOW - 1000) })
      .where('account_id', '=', a.id)
      .where('id', '=', 'expired')
      .execute();
    assert.equal(await requeueDelivery(h.database.db, a.id, 'expired', ts(NOW)), true);
    const written = await completeDeliveries(h.database.db, h.database.dialect, [
      done('expired', 'wh_requeue', 't-expired', success(200)),
    ]);
    assert.deepEqual(written, [false], 'the late outcome does not overwrite the requeue');
    assert.deepEqual((await rowsOf(['expired'])).expired, {
      status: 'pending',
      attempts: 0,
      retries: 0,
      next: ts(NOW),
      leased: false,
    });
    assert.deepEqual(await attemptsOf(['expired']), []);
  });
});
