import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { createData } from '../../src/modules/data/service.ts';
import { postgresSkipReason } from '../helpers/databases.ts';
import { createHarness } from '../helpers/harness.ts';
import { stepInBefore } from '../helpers/pg-step-in.ts';

// The retry that takes over an abandoned run reads the claim, then releases it. A slow run that was
// not dead after all may commit its change (and mark its claim) in between: the release must then
// leave the committed claim alone, or the retry runs the request a second time. PostgreSQL only: the
// test steps in between the read and the delete through the pg client, which SQLite does not use.

describe('Idempotency-Key: an abandoned run that commits while a retry takes it over [postgres]', {
  skip: postgresSkipReason(),
}, () => {
  const h = createHarness('postgres');
  before(() => h.setup());
  after(() => h.teardown());

  it('the retry does not run the request again: 409, and one object', async () => {
    const acc = await h.account('enterprise');
    const caller = await acc.user('admin', ['read', 'write']);
    const key = `${caller.keyId} race-1`;
    const count = async () =>
      Number(
        (
          await sql<{
            n: number;
          }>`SELECT count(*) AS n FROM data_objects WHERE account_id = ${acc.id}`.execute(h.database.db)
        ).rows[0]?.n,
      );
    // Run A claimed the key 5 minutes ago and is still going: past the abandonment time.
    await sql`INSERT INTO idempotency_keys (account_id, key, fingerprint, status, created_at, claim)
      VALUES (${acc.id}, ${key}, 'f', 'running', ${new Date(Date.now() - 5 * 60_000).toISOString()}, 'run-A')`.execute(
      h.database.db,
    );
    const start = await count();
    let stepped = false;
    stepInBefore(/^delete from "idempotency_keys"/, async () => {
      await createData(
        h.ctx,
        acc.id,
        { title: 'Once', type: 'note' },
        { accountId: acc.id, key, claim: 'run-A' },
      );
      stepped = true;
    });
    const retry = await h.request('POST', '/v1/data', {
      key: caller.key,
      body: { title: 'Once', type: 'note' },
      headers: { 'idempotency-key': 'race-1' },
    });
    assert.ok(stepped, 'run A committed between the read and the release');
    assert.equal(retry.status, 409, retry.raw);
    assert.equal(retry.body.error.code, 'idempotency_conflict');
    assert.equal(await count(), start + 1, 'one object for one key');
  });
});
