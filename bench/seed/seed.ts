/**
 * Seeds one account with N data objects in batched multi-row inserts, one transaction per batch: the
 * rows are what `POST /v1/data` would have written, without the outbox events (nobody subscribes
 * here) and, unless asked, without search-index entries.
 */
import { loadConfig } from '../../src/config.ts';
import { migrate, openDatabase } from '../../src/db/database.ts';
import { asBatch } from '../../src/db/group-commit.ts';
import type { Db, Dialect } from '../../src/db/types.ts';
import { ulid } from '../../src/lib/ids.ts';
import { titleSortKey } from '../../src/lib/sort-key.ts';
import { createAccount } from '../../src/modules/accounts/service.ts';
import type { DataRow } from '../../src/modules/data/repo.ts';
import { indexDataObject } from '../../src/search/search-index.ts';
import { objectGenerator } from './words.ts';

/** A generated object as a `data_objects` row (both bench generators yield this shape). */
export function toDataRow(
  accountId: string,
  id: string,
  o: { title: string; type: string; content: string; tags: string[]; metadata: Record<string, string> },
  createdAt: string,
): DataRow {
  return {
    account_id: accountId,
    id,
    title: o.title,
    title_sort: titleSortKey(o.title),
    type: o.type,
    content: o.content,
    tags: JSON.stringify(o.tags),
    metadata: JSON.stringify(o.metadata),
    created_at: createdAt,
    updated_at: null,
  };
}

export interface SeedOptions {
  /** ADS_DATABASE_URL value: a `postgres://` URL or a SQLite file path. */
  databaseUrl: string;
  dataDir: string;
  objects: number;
  /** Rows per transaction. */
  batch?: number;
  /** Generator seed: the same seed gives the same corpus. */
  seed?: number;
  /**
   * Also writes each object's search-index entry through the same code as `POST /v1/data`. Off by
   * default: that path costs one to two orders of magnitude more than the row itself.
   */
  index?: boolean;
  onProgress?: (done: number) => void;
}

export interface SeedResult {
  accountId: string;
  adminUserId: string;
  /** The account's first admin key (read, write, admin scopes). */
  apiKey: string;
  objects: number;
  seconds: number;
  rowsPerSecond: number;
}

/**
 * Writes the rows' search-index entries through the code `POST /v1/data` runs, as one batch (as
 * group commit makes them): their vocabulary changes are summed and applied once.
 */
export async function indexRows(trx: Db, dialect: Dialect, rows: DataRow[]): Promise<void> {
  await asBatch(trx, async () => {
    for (const row of rows) await indexDataObject(trx, dialect, row);
  });
}

/** Creates an enterprise account and `objects` data objects with creation times spread over two years. */
export async function seedDatabase(opts: SeedOptions): Promise<SeedResult> {
  const config = loadConfig({ ADS_DATA_DIR: opts.dataDir, ADS_DATABASE_URL: opts.databaseUrl });
  const database = openDatabase(config.database);
  try {
    await migrate(database);
    const created = await createAccount(database, {
      name: 'Bench account',
      adminEmail: 'bench@example.test',
      plan: 'enterprise',
    });
    const accountId = created.account.id;
    const next = objectGenerator(opts.seed ?? 42);
    const batch = Math.max(1, Math.min(opts.batch ?? 1000, 2000));
    const end = Date.now() - 60_000;
    const span = 2 * 365 * 86_400_000;
    const step = span / Math.max(1, opts.objects);
    const started = performance.now();
    for (let done = 0; done < opts.objects; ) {
      const rows: DataRow[] = [];
      for (let i = 0; i < batch && done + i < opts.objects; i++) {
        const o = next();
        // Oldest first, so ids (ULIDs) and creation times rise together as they would in real use.
        const at = Math.round(end - span + (done + i) * step);
        rows.push(toDataRow(accountId, `dat_${ulid(at)}`, o, new Date(at).toISOString()));
      }
      await database.db.transaction().execute(async (trx) => {
        await trx.insertInto('data_objects').values(rows).execute();
        if (opts.index) await indexRows(trx, database.dialect, rows);
      });
      done += rows.length;
      opts.onProgress?.(done);
    }
    const seconds = (performance.now() - started) / 1000;
    return {
      accountId,
      adminUserId: created.admin.id,
      apiKey: created.api_key.key,
      objects: opts.objects,
      seconds,
      rowsPerSecond: opts.objects / Math.max(seconds, 1e-9),
    };
  } finally {
    await database.close();
  }
}
