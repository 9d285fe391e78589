import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { sql } from 'kysely';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { openDatabase } from '../../src/db/database.ts';

describe('SQLite page cache (ADS_SQLITE_CACHE_MB)', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ads-cache-'));
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  async function cacheSize(env: Record<string, string>): Promise<number> {
    const config = loadConfig({ ADS_DATA_DIR: dir, ...env });
    const database = openDatabase(config.database);
    try {
      const { rows } = await sql<{ cache_size: number }>`PRAGMA cache_size`.execute(database.db);
      return Number(rows[0]!.cache_size);
    } finally {
      await database.close();
    }
  }

  it('is 64 MiB by default (negative: KiB), not SQLite’s 2 MiB', async () => {
    assert.equal(await cacheSize({}), -64 * 1024);
  });

  it('follows the setting, for a database given by path too', async () => {
    assert.equal(await cacheSize({ ADS_SQLITE_CACHE_MB: '16' }), -16 * 1024);
    assert.equal(
      await cacheSize({
        ADS_SQLITE_CACHE_MB: '8',
        ADS_DATABASE_URL: `sqlite:${path.join(dir, 'other.sqlite')}`,
      }),
      -8 * 1024,
    );
  });

  it('rejects a setting that is not a positive integer, naming it', () => {
    for (const bad of ['0', '-1', '1.5', 'lots']) {
      assert.throws(
        () => loadConfig({ ADS_DATA_DIR: dir, ADS_SQLITE_CACHE_MB: bad }),
        (err: unknown) => err instanceof ConfigError && err.message.includes('ADS_SQLITE_CACHE_MB'),
        bad,
      );
    }
  });
});
