import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { type Database, migrate, openDatabase } from '../../src/db/database.ts';
import { type Completion, completeDeliveries } from '../../src/events/delivery-queue.ts';
import { createAccount } from '../../src/modules/accounts/service.ts';
import { deleteWebhook } from '../../src/modules/webhooks/repo.ts';
import { latch, sessionsWaitingOnLocks, until } from '../helpers/concurrency.ts';
import { createTestDatabase, postgresSkipReason } from '../helpers/databases.ts';

const NOW = '2026-03-01T00:00:00.000Z';
const LATER = '2026-03-01T01:00:00.000Z';

/**
 * On PostgreSQL a webhook's deletion and a worker writing the outcome of one of its deliveries run
 * at once (READ COMMITTED). The deletion must not leave an attempt row behind whose delivery it
 * removed: the outcome's transaction locks the webhook (FOR KEY SHARE) before anything else, so the
 * deletion waits for it and then sees its attempt. SQLite serialises the two transactions.
 */
describe('PostgreSQL: deleting a webhook while an outcome of its delivery is written', {
  skip: postgresSkipReason(),
}, () => {
  let database: Database;
  let drop: () => Promise<void>;
  let accountId: string;

  before(async () => {
    const created = await createTestDatabase('postgres');
    drop = created.drop;
    database = openDatabase(created.config);
    await migrate(database);
    accountId = (await createAccount(database, { name: 'Race', adminEmail: 'race@example.com' })).account.id;
  });
  after(async () => {
    await database?.close();
    await drop?.();
  });

  const waiting = () => sessionsWaitingOnLocks(database.db);

  it('leaves no attempt row behind when the deletion meets a successful outcome in flight', async () => {
    const db = database.db;
    await sql`INSERT INTO webhooks (account_id, id, url, events, status, created_at, updated_at)
      VALUES (${accountId}, 'wh_race', 'https://example.com/hook', '["*"]', 'active', ${NOW}, ${NOW})`.execute(
      db,
    );
    await db
      .insertInto('webhook_deliveries')
      .values({
        account_id: accountId,
        id: 'del_race',
        webhook_id: 'wh_race',
        event_id: 'evt',
        event_name: 'data.created',
        status: 'pending',
        attempt_count: 0,
        next_attempt_at: LATER,
        locked_until: LATER,
        claim_token: 'token',
        created_at: NOW,
        updated_at: NOW,
      })
      .execute();
    const completion: Completion = {
      claim: {
        account_id: accountId,
        id: 'del_race',
        webhook_id: 'wh_race',
        event_id: 'evt',
        event_name: 'data.created',
        attempt_count: 0,
        retries_used: 0,
        manual: 0,
        claim_token: 'token',
      },
      outcome: {
        status: 'succeeded',
        nextAttemptAt: null,
        retriesUsed: 0,
        attempt: { at: NOW, status_code: 200, duration_ms: 3, error: null },
      },
      now: NOW,
    };

    // A third transaction inserts the attempt row the outcome will write, and holds it uncommitted:
    // the outcome's transaction, having updated (and locked) its delivery, waits on that row's key.
    const rollback = latch();
    const inserted = latch();
    const blocker = db
      .transaction()
      .execute(async (trx) => {
        await sql`INSERT INTO webhook_attempts (account_id, delivery_id, attempt, at, status_code, duration_ms)
          VALUES (${accountId}, 'del_race', 1, ${NOW}, 599, 1)`.execute(trx);
        inserted.open();
        await rollback.opened;
        throw new Error('rolled back on purpose');
      })
      .catch((e: Error) => assert.equal(e.message, 'rolled back on purpose'));
    await inserted.opened;

    const outcome = completeDeliveries(db, 'postgres', [completion]);
    await until('the outcome waits on the held attempt row', async () => (await waiting()) === 1);
    const deletion = db.transaction().execute((trx) => deleteWebhook(trx, accountId, 'wh_race'));
    await until('the deletion waits too', async () => (await waiting()) === 2);
    rollback.open();
    await blocker;
    assert.deepEqual(await outcome, [true]);
    assert.equal(await deletion, true);

    const left = async (table: 'webhook_attempts' | 'webhook_deliveries' | 'webhooks') =>
      (
        await sql<{ n: number }>`SELECT count(*)::int AS n FROM ${sql.table(table)}
          WHERE account_id = ${accountId}`.execute(db)
      ).rows[0]!.n;
    assert.equal(await left('webhooks'), 0);
    assert.equal(await left('webhook_deliveries'), 0);
    // Before the lock: the deletion had read the attempts to delete before the outcome's insert
    // committed, then deleted the delivery after it, and the attempt stayed.
    assert.equal(await left('webhook_attempts'), 0);
  });
});
