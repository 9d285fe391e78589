import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, it } from 'node:test';
import { migrate, openDatabase } from '../../src/db/database.ts';
import { testConfig } from '../helpers/harness.ts';
import { runAds } from '../helpers/process.ts';

// The SQLite database holds every account's data, member emails and webhook URLs. Like the secret
// key, the TLS key and the mail outbox, it is created readable by its owner only, whatever the
// umask, and so is the copy `ads backup` writes.
const root = fs.mkdtempSync(path.join(os.tmpdir(), 'ads-modes-'));
after(() => fs.rmSync(root, { recursive: true, force: true }));

const modeOf = (p: string) => fs.statSync(p).mode & 0o777;

it('a new data directory, its database and the database backup are owner-only', async () => {
  const previous = process.umask(0o022);
  try {
    const dataDir = path.join(root, 'var');
    const config = testConfig(dataDir);
    const database = openDatabase(config.database);
    try {
      await migrate(database);
      const file = path.join(dataDir, 'ads.sqlite');
      assert.equal(modeOf(dataDir), 0o700, 'data directory');
      assert.equal(modeOf(file), 0o600, 'database');
      // Open in WAL mode: SQLite gives its -wal and -shm files the database file's mode.
      for (const suffix of ['-wal', '-shm']) assert.equal(modeOf(file + suffix), 0o600, suffix);
    } finally {
      await database.close();
    }
    const dest = path.join(root, 'backup');
    const res = runAds(['backup', dest], { ADS_DATA_DIR: dataDir });
    assert.equal(res.code, 0, res.stderr);
    assert.equal(modeOf(path.join(dest, 'ads.sqlite')), 0o600, 'backup copy');
    assert.equal(modeOf(dest), 0o700, 'backup directory');
  } finally {
    process.umask(previous);
  }
});
