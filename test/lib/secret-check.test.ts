import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ConfigError } from '../../src/config.ts';
import { migrate, openDatabase } from '../../src/db/database.ts';
import { keyFileOf } from '../../src/lib/secret-box.ts';
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
          /ADS_SECRET_KEY cannot open the webhook signing secrets/.test(err.message),
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
