/**
 * Seeds a database with one enterprise account and N data objects of about 1 KB, with a progress
 * bar on stderr and the rate in rows/s at the end.
 *
 *   node --import tsx bench/seed/run.ts [--objects 100000] [--db sqlite|postgres]
 *     [--data-dir DIR] [--database-url URL] [--pg-url ADMIN_URL] [--batch 1000] [--index]
 *     [--json] [--smoke]
 *
 * With `--data-dir` (SQLite) or `--database-url` (PostgreSQL, or a SQLite file) the seeded
 * database stays for a server to use. Without either it seeds a throwaway database (a temporary
 * directory, or a fresh `ads_bench_<random>` PostgreSQL database) and removes it: a measurement of
 * seeding speed alone.
 * `--json` prints the result (account id, admin key, rows/s) as one JSON line on stdout. `--index`
 * also builds the search index through the `POST /v1/data` code path (much slower).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { progressBar } from './progress.ts';
import { seedDatabase } from './seed.ts';
import { type BenchDialect, type BenchTarget, createTarget, defaultPostgresUrl } from './target.ts';

const { values } = parseArgs({
  options: {
    objects: { type: 'string' },
    db: { type: 'string', default: 'sqlite' },
    'data-dir': { type: 'string' },
    'database-url': { type: 'string' },
    'pg-url': { type: 'string', default: defaultPostgresUrl() },
    batch: { type: 'string', default: '1000' },
    index: { type: 'boolean', default: false },
    json: { type: 'boolean', default: false },
    smoke: { type: 'boolean', default: false },
  },
  // `npm run bench` hands every scenario the same flags; ignore the ones meant for others.
  strict: false,
});

const objects = Number(values.objects ?? (values.smoke ? 2_000 : 100_000));
if (!Number.isSafeInteger(objects) || objects < 0) {
  console.error('--objects must be a whole number');
  process.exit(2);
}
// `both` (the HTTP harness's flag) seeds SQLite here: this script seeds one database per run.
const dialect: BenchDialect = values.db === 'postgres' ? 'postgres' : 'sqlite';

let target: BenchTarget | undefined;
let dataDir = values['data-dir'] as string | undefined;
let databaseUrl = values['database-url'] as string | undefined;
if (!dataDir && !databaseUrl) {
  target = await createTarget(dialect, values['pg-url'] as string);
  dataDir = target.dataDir;
  databaseUrl = target.databaseUrl;
} else {
  dataDir ??= fs.mkdtempSync(path.join(os.tmpdir(), 'ads-seed-'));
  fs.mkdirSync(dataDir, { recursive: true });
  databaseUrl ??= path.join(dataDir, 'ads.sqlite');
}

// An interrupted throwaway seed still removes its database.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    (target?.drop() ?? Promise.resolve()).finally(() => process.exit(130));
  });
}

const bar = progressBar(`seed ${databaseUrl.startsWith('postgres') ? 'postgres' : 'sqlite'}`, objects);
try {
  const result = await seedDatabase({
    databaseUrl,
    dataDir,
    objects,
    batch: Number(values.batch),
    index: values.index === true,
    onProgress: (done) => bar.update(done),
  });
  bar.finish(objects);
  if (values.json) process.stdout.write(`${JSON.stringify(result)}\n`);
  else {
    process.stdout.write(
      `Seeded ${objects.toLocaleString('en')} objects in ${result.seconds.toFixed(1)} s ` +
        `(${Math.round(result.rowsPerSecond).toLocaleString('en')} rows/s) into account ${result.accountId}` +
        `${target ? ' (throwaway database, now removed)' : ''}.\n`,
    );
  }
} finally {
  await target?.drop();
}
