/**
 * Database-side preparation of an HTTP run, done through the repository layer while the server is
 * not under load: extra API keys, the id lists the scenarios draw from (and those objects' search
 * index entries), the TLS files, and the account's plan (switched to pro for the rate-limited
 * scenarios).
 */
import fs from 'node:fs';
import path from 'node:path';
import { type Config, loadConfig } from '../../src/config.ts';
import { type Database, openDatabase } from '../../src/db/database.ts';
import { newId } from '../../src/lib/ids.ts';
import { isoNow, systemClock } from '../../src/lib/time.ts';
import { loadTls } from '../../src/lib/tls.ts';
import { setAccountPlan } from '../../src/modules/accounts/repo.ts';
import { insertApiKey } from '../../src/modules/api-keys/repo.ts';
import { generateApiKey } from '../../src/modules/api-keys/tokens.ts';
import { indexRows } from '../seed/seed.ts';
import type { BenchTarget } from '../seed/target.ts';
import { rng } from '../seed/words.ts';

export interface Fixtures {
  keys: string[];
  readIdsFile: string;
  deleteIdsFile: string;
  readIds: number;
  deleteIds: number;
  certFile: string;
  keyFile: string;
}

function configOf(target: BenchTarget): Config {
  return loadConfig({ ADS_DATA_DIR: target.dataDir, ADS_DATABASE_URL: target.databaseUrl });
}

/** Objects indexed per transaction by `indexObjects`. */
const INDEX_BATCH = 500;

/**
 * Writes the search-index entries of the account's objects `ids` (seed.ts indexRows), INDEX_BATCH
 * to a transaction. Seeded objects have none (unless `--seed-index`), and a PATCH or DELETE of an
 * object without one skips the index work every object written through the API costs: FTS5's
 * secure delete of its old words, the vocabulary update.
 */
async function indexObjects(database: Database, accountId: string, ids: string[]): Promise<void> {
  for (let i = 0; i < ids.length; i += INDEX_BATCH) {
    const chunk = ids.slice(i, i + INDEX_BATCH);
    await database.db.transaction().execute(async (trx) => {
      const rows = await trx
        .selectFrom('data_objects')
        .selectAll()
        .where('account_id', '=', accountId)
        .where('id', 'in', chunk)
        .execute();
      await indexRows(trx, database.dialect, rows);
    });
  }
}

/**
 * Adds `keyCount` read/write keys to the account's admin and writes two disjoint, shuffled id lists:
 * up to `readMax` for reads and patches, up to `deleteMax` for DELETE. With `index`, the objects of
 * both lists get their search-index entries, so that PATCH and DELETE cost what they cost on
 * objects created through the API (the seed did not index them).
 */
export async function prepareFixtures(
  target: BenchTarget,
  account: { accountId: string; adminUserId: string },
  opts: { keyCount: number; readMax: number; deleteMax: number; index: boolean },
): Promise<Fixtures> {
  const config = configOf(target);
  // Made now so the server's first start is not also a certificate generation.
  await loadTls(config);
  const database = openDatabase(config.database);
  try {
    const keys: string[] = [];
    const now = isoNow(systemClock);
    await database.db.transaction().execute(async (trx) => {
      for (let i = 0; i < opts.keyCount; i++) {
        const { key, hash, prefix } = generateApiKey();
        await insertApiKey(trx, {
          account_id: account.accountId,
          id: newId('apiKey'),
          user_id: account.adminUserId,
          name: `bench ${i}`,
          key_hash: hash,
          key_prefix: prefix,
          scopes: 'read write',
          created_at: now,
          revoked_at: null,
        });
        keys.push(key);
      }
    });
    const rows = await database.db
      .selectFrom('data_objects')
      .select('id')
      .where('account_id', '=', account.accountId)
      .execute();
    const ids = rows.map((r) => r.id);
    // Fisher-Yates with a fixed seed: the same objects every run.
    const rand = rng(9);
    for (let i = ids.length - 1; i > 0; i--) {
      const j = Math.floor(rand() * (i + 1));
      [ids[i], ids[j]] = [ids[j]!, ids[i]!];
    }
    const readCount = Math.min(opts.readMax, Math.ceil(ids.length / 2));
    const read = ids.slice(0, readCount);
    const del = ids.slice(readCount, readCount + opts.deleteMax);
    if (opts.index) await indexObjects(database, account.accountId, [...read, ...del]);
    const readIdsFile = path.join(target.dataDir, 'bench-read-ids.txt');
    const deleteIdsFile = path.join(target.dataDir, 'bench-delete-ids.txt');
    fs.writeFileSync(readIdsFile, read.join('\n'));
    fs.writeFileSync(deleteIdsFile, del.join('\n'));
    return {
      keys,
      readIdsFile,
      deleteIdsFile,
      readIds: read.length,
      deleteIds: del.length,
      certFile: path.join(config.dataDir, 'tls/cert.pem'),
      keyFile: path.join(config.dataDir, 'tls/key.pem'),
    };
  } finally {
    await database.close();
  }
}

/** Moves the account to `plan`; the server applies it from the next request on. */
export async function switchPlan(target: BenchTarget, accountId: string, plan: 'pro' | 'enterprise') {
  const database = openDatabase(configOf(target).database);
  try {
    await setAccountPlan(database.db, accountId, plan);
  } finally {
    await database.close();
  }
}
