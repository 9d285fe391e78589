import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { ConfigError } from '../../src/config.ts';
import { type Database, migrate, openDatabase } from '../../src/db/database.ts';
import { createSecretBox, keyFileOf } from '../../src/lib/secret-box.ts';
import { checkSecretKey } from '../../src/lib/secret-check.ts';
import { createAccount } from '../../src/modules/accounts/service.ts';
import { createTestDatabase } from '../helpers/databases.ts';
import { describeEachDatabase } from '../helpers/harness.ts';
import { runAds } from '../helpers/process.ts';

const otherKey = () => Buffer.alloc(32, 9).toString('base64');
const freshDir = () => fs.mkdtempSync(path.join(os.tmpdir(), 'ads-secret-check-'));

describeEachDatabase('start-up secret key check (src/lib/secret-check.ts)', (h) => {
  it('passes on a database with nothing sealed, and creates no key file', async () => {
    const dir = freshDir();
    // Other suites of this database may have sealed values: only an empty table set counts here.
    const created = await createTestDatabase(h.database.dialect);
    const database = openDatabase(created.config);
    try {
      await migrate(database);
      await checkSecretKey({ ...h.config, dataDir: dir, database: created.config }, database);
      assert.equal(fs.existsSync(keyFileOf(dir)), false);
    } finally {
      await database.close();
      await created.drop();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a missing secret.key, or another key, once a webhook secret is sealed', async () => {
    const acc = await h.account('pro');
    const res = await h.request('POST', '/v1/webhooks', {
      key: acc.adminKey,
      body: { url: 'https://example.com/hook', events: ['*'], secret: 'whsec-check-me' },
    });
    assert.equal(res.status, 201);
    // The key it was sealed with opens it.
    await checkSecretKey(h.config, h.database);

    const dir = freshDir();
    try {
      await assert.rejects(
        checkSecretKey({ ...h.config, dataDir: dir, secretKey: undefined }, h.database),
        (err: Error) =>
          err instanceof ConfigError &&
          err.message.includes(`${keyFileOf(dir)} is missing`) &&
          err.message.includes('webhook signing secrets') &&
          err.message.includes('ADS_SECRET_KEY_CHECK=false'),
      );
      assert.equal(fs.existsSync(keyFileOf(dir)), false, 'no new key is generated');
      await assert.rejects(
        checkSecretKey({ ...h.config, secretKey: otherKey() }, h.database),
        (err: Error) =>
          err instanceof ConfigError &&
          /ADS_SECRET_KEY cannot open any of the webhook signing secrets/.test(err.message),
      );
      fs.writeFileSync(keyFileOf(dir), `${otherKey()}\n`);
      await assert.rejects(
        checkSecretKey({ ...h.config, dataDir: dir, secretKey: undefined }, h.database),
        (err: Error) => err instanceof ConfigError && err.message.includes(`${keyFileOf(dir)} cannot open`),
      );
      // A key lost for good: accepted when asked for.
      await checkSecretKey({ ...h.config, secretKey: otherKey(), secretKeyCheck: false }, h.database);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

// On a database of its own, so that what is sealed, and with which key, is known.
describeEachDatabase('start-up secret key check: which sealed values it reads', (h) => {
  const keyA = Buffer.alloc(32, 1).toString('base64');
  const keyB = Buffer.alloc(32, 2).toString('base64');
  const withDatabase = async (fn: (database: Database, accountId: string) => Promise<void>) => {
    const created = await createTestDatabase(h.database.dialect);
    const database = openDatabase(created.config);
    try {
      await migrate(database);
      const { account } = await createAccount(database, { name: 'Sealed', adminEmail: 's@example.com' });
      await fn(database, account.id);
    } finally {
      await database.close();
      await created.drop();
    }
  };
  const webhook = (accountId: string, n: number, key: string, at: string) => ({
    id: `wh_01JD4Z5T8N3QK9W2V7R6M1B0X${n}`,
    account_id: accountId,
    url: 'https://example.com/hook',
    events: JSON.stringify(['*']),
    sealed_secret: createSecretBox(Buffer.from(key, 'base64')).seal(`secret-${n}`),
    status: 'active' as const,
    disabled_reason: null,
    created_at: '2026-01-01T00:00:00.000Z',
    updated_at: at,
  });

  it('passes once any webhook has a secret the key opens, whichever changed last', async () => {
    await withDatabase(async (database, accountId) => {
      // Lost key A: both webhooks sealed with it; the one changed last then given a secret under B.
      await database.db
        .insertInto('webhooks')
        .values([
          webhook(accountId, 1, keyA, '2026-01-02T00:00:00.000Z'),
          webhook(accountId, 2, keyA, '2026-01-02T00:00:01.000Z'),
          webhook(accountId, 3, keyA, '2026-01-02T00:00:02.000Z'),
          webhook(accountId, 4, keyA, '2026-01-02T00:00:03.000Z'),
        ])
        .execute();
      const config = { ...h.config, secretKey: keyB, secretKeyCheck: true };
      await assert.rejects(checkSecretKey(config, database), ConfigError);
      await database.db
        .updateTable('webhooks')
        .set({
          sealed_secret: createSecretBox(Buffer.from(keyB, 'base64')).seal('new secret'),
          updated_at: '2026-02-01T00:00:00.000Z',
        })
        .where('id', '=', 'wh_01JD4Z5T8N3QK9W2V7R6M1B0X1')
        .execute();
      await checkSecretKey(config, database);
      // The others, still sealed with the lost key, then change (disabled after failing to sign):
      // the one that opens still counts, wherever it stands.
      await database.db
        .updateTable('webhooks')
        .set({ status: 'disabled', updated_at: '2026-03-01T00:00:00.000Z' })
        .where('id', '!=', 'wh_01JD4Z5T8N3QK9W2V7R6M1B0X1')
        .execute();
      await checkSecretKey(config, database);
    });
  });

  it('reads stored idempotent answers too: a database holding only those refuses a missing key', async () => {
    await withDatabase(async (database, accountId) => {
      await sql`INSERT INTO idempotency_keys (account_id, key, fingerprint, status, response_status, sealed_response, created_at, claim)
        VALUES (${accountId}, 'k one', 'f', 'done', 201, ${createSecretBox(Buffer.from(keyA, 'base64')).seal('{}')},
        ${new Date().toISOString()}, 'c')`.execute(database.db);
      const dir = freshDir();
      try {
        await assert.rejects(
          checkSecretKey({ ...h.config, dataDir: dir, secretKey: undefined, secretKeyCheck: true }, database),
          (err: Error) => err instanceof ConfigError && err.message.includes('stored idempotent answers'),
        );
        await checkSecretKey({ ...h.config, secretKey: keyA, secretKeyCheck: true }, database);
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });
  });
});

// The restore that left out secret.key: `ads serve` and `ads worker` stop with one line and exit 2
// instead of generating a new key that cannot read the webhook secrets.
describe('ads serve and ads worker without the secret.key of their database', () => {
  const dataDir = freshDir();
  before(async () => {
    const database = openDatabase({ dialect: 'sqlite', file: path.join(dataDir, 'ads.sqlite') });
    try {
      await migrate(database);
      const { account } = await createAccount(database, { name: 'Restored', adminEmail: 'a@example.com' });
      await database.db
        .insertInto('webhooks')
        .values({
          id: 'wh_01JD4Z5T8N3QK9W2V7R6M1B0XC',
          account_id: account.id,
          url: 'https://example.com/hook',
          events: JSON.stringify(['*']),
          sealed_secret: 'v1.AAAAAAAAAAAAAAAA.AAAA.AAAAAAAAAAAAAAAAAAAAAA',
          status: 'active',
          disabled_reason: null,
          created_at: new Date().toISOString(),
          updated_at: new Date().toISOString(),
        })
        .execute();
    } finally {
      await database.close();
    }
  });
  after(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  for (const command of ['serve', 'worker']) {
    it(`${command}: exit 2 naming secret.key, and no key generated`, () => {
      const res = runAds([command], { ADS_DATA_DIR: dataDir, ADS_PORT: '0' });
      assert.equal(res.code, 2, `${res.stdout}\n${res.stderr}`);
      assert.match(res.stderr, /secret\.key is missing, but the database holds webhook signing secrets/);
      assert.equal(fs.existsSync(keyFileOf(dataDir)), false);
    });
  }
});
