import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CompiledQuery, type Kysely, sql } from 'kysely';
import { migrate, openDatabase } from '../../src/db/database.ts';
import { up as dueCovering } from '../../src/db/migrations/0024-due-covering.ts';
import { claimDueDeliveries, claimStatement } from '../../src/events/delivery-queue.ts';
import { createAccount } from '../../src/modules/accounts/service.ts';
import { assertSqliteReplayChangesNothing, createTestDatabase } from '../helpers/databases.ts';
import { createHarness } from '../helpers/harness.ts';

const OPTS = {
  now: '2026-11-29T12:00:00.000Z',
  leaseUntil: '2026-11-29T12:01:00.000Z',
  limit: 64,
  token: 't',
};
// One webhook at its share (left out of the scan), one account with attempts in flight.
const SHARE = {
  perWebhook: 56,
  perAccount: 56,
  webhooks: new Map([
    ['whk_full', 56],
    ['whk_busy', 3],
  ]),
  accounts: new Map([['acc_busy', 3]]),
};

describe('the SQLite claim statement', () => {
  const h = createHarness('sqlite');
  before(() => h.setup());
  after(() => h.teardown());

  it('binds its LIMITs as +? (no recompile per claim) and scans the covering due index in order', async () => {
    const compiled = claimStatement('sqlite', OPTS, SHARE).compile(h.database.db);
    // A bare `limit ?` makes SQLite compile the bound value into the program: the statement is
    // parsed and planned again every time it runs, once per claim.
    assert.doesNotMatch(compiled.sql, /limit \?/i);
    assert.equal(compiled.sql.match(/limit \+\?/gi)?.length, 2, 'the scan and the pick');
    const plan = await h.database.db.executeQuery<{ detail: string }>(
      CompiledQuery.raw(`explain query plan ${compiled.sql}`, [...compiled.parameters]),
    );
    const details = plan.rows.map((r) => r.detail);
    // Covering (migration 0024): the rows a scan passes over are read from the index alone.
    assert.ok(
      details.some((d) =>
        /^SEARCH webhook_deliveries USING COVERING INDEX webhook_deliveries_due_idx \(next_attempt_at<\?\)$/.test(
          d,
        ),
      ),
      details.join('\n'),
    );
    // The update finds each picked row by its key, never by scanning the table.
    assert.ok(
      details.some((d) =>
        /USING (COVERING )?INDEX sqlite_autoindex_webhook_deliveries_1 \(account_id=\? AND id=\?\)/.test(d),
      ),
    );
    assert.ok(!details.some((d) => /^SCAN webhook_deliveries\b/.test(d)), details.join('\n'));
  });

  it('keeps PostgreSQL LIMITs as plain parameters', () => {
    const compiled = claimStatement('postgres', OPTS, SHARE).compile(h.database.db);
    assert.doesNotMatch(compiled.sql, /limit \+/i);
  });
});

describe('migration 0024 (SQLite): the due index becomes covering', () => {
  it('rebuilds it over the deliveries an earlier release queued, claims the same rows, and runs once', async () => {
    const created = await createTestDatabase('sqlite');
    const database = openDatabase(created.config);
    try {
      await migrate(database, { to: '0023-list-covering' });
      const db = database.db as unknown as Kysely<unknown>;
      const { account } = await createAccount(database, { name: 'Old', adminEmail: 'old@example.com' });
      const at = (s: number) => new Date(Date.parse(OPTS.now) - s * 1000).toISOString();
      const rows = [
        { id: 'd1', webhook: 'whk_a', status: 'pending', due: at(30) },
        { id: 'd2', webhook: 'whk_b', status: 'pending', due: at(20) },
        { id: 'd3', webhook: 'whk_a', status: 'succeeded', due: null },
        { id: 'd4', webhook: 'whk_a', status: 'pending', due: at(-60) }, // not yet due
        { id: 'd5', webhook: 'whk_c', status: 'pending', due: at(10) },
      ];
      for (const r of rows) {
        await sql`INSERT INTO webhook_deliveries (account_id, id, webhook_id, event_id, event_name, status,
            next_attempt_at, created_at, updated_at)
          VALUES (${account.id}, ${r.id}, ${r.webhook}, 'evt', 'data.created', ${r.status}, ${r.due},
            ${OPTS.now}, ${OPTS.now})`.execute(db);
      }
      const columns = async () =>
        (
          await sql<{ name: string }>`SELECT name FROM pragma_index_info('webhook_deliveries_due_idx')
            ORDER BY seqno`.execute(db)
        ).rows.map((r) => r.name);
      assert.deepEqual(await columns(), ['next_attempt_at']);

      assert.deepEqual(await migrate(database, { to: '0024-due-covering' }), ['0024-due-covering']);
      assert.deepEqual(await columns(), ['next_attempt_at', 'account_id', 'webhook_id', 'id']);
      const { rows: partial } = await sql<{ partial: number }>`
        SELECT partial FROM pragma_index_list('webhook_deliveries') WHERE name = 'webhook_deliveries_due_idx'`.execute(
        db,
      );
      assert.deepEqual(partial, [{ partial: 1 }], 'still holds pending deliveries only');
      // The due ones; a share that leaves whk_b out still reaches past it, and the next claim takes it.
      const claim = (token: string, full: Map<string, number>) =>
        database.db.transaction().execute((trx) =>
          claimDueDeliveries(trx, 'sqlite', {
            ...OPTS,
            token,
            share: { perWebhook: 1, perAccount: 10, webhooks: full, accounts: new Map() },
          }),
        );
      assert.deepEqual((await claim('t1', new Map([['whk_b', 1]]))).map((c) => c.id).sort(), ['d1', 'd5']);
      assert.deepEqual(
        (await claim('t2', new Map())).map((c) => c.id),
        ['d2'],
      );

      // Run again (a replay after a crash), it finds its work done and rebuilds nothing.
      await assertSqliteReplayChangesNothing(db, dueCovering);
    } finally {
      await database.close();
      await created.drop();
    }
  });
});
