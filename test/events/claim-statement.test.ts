import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CompiledQuery } from 'kysely';
import { claimStatement } from '../../src/events/delivery-queue.ts';
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

  it('binds its LIMITs as +? (no recompile per claim) and scans the due index in order', async () => {
    const compiled = claimStatement('sqlite', OPTS, SHARE).compile(h.database.db);
    // A bare `limit ?` makes SQLite compile the bound value into the program: the statement is
    // parsed and planned again every time it runs, once per claim.
    assert.doesNotMatch(compiled.sql, /limit \?/i);
    assert.equal(compiled.sql.match(/limit \+\?/gi)?.length, 2, 'the scan and the pick');
    const plan = await h.database.db.executeQuery<{ detail: string }>(
      CompiledQuery.raw(`explain query plan ${compiled.sql}`, [...compiled.parameters]),
    );
    const details = plan.rows.map((r) => r.detail);
    assert.ok(
      details.some((d) =>
        /^SEARCH webhook_deliveries USING INDEX webhook_deliveries_due_idx \(next_attempt_at<\?\)$/.test(d),
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
