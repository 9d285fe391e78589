/**
 * Search latency: `--objects` objects of pseudo-English in one account plus 9 other accounts of a
 * tenth of that each, indexed through the same code path as `POST /data`; then, per query shape,
 * p50/p95/p99 of `GET /v1/search` driven in process with `app.inject()` (no sockets or TLS: the
 * figure is routing, validation, auth, the queries and the excerpts) and, in the same run, of the
 * raw index work alone (wildcard expansion plus the ranked, counted query).
 *
 *   npm run bench -- search [--objects 100000] [--db sqlite|postgres|both]
 *     [--iterations 200] [--pg-url postgres://postgres@127.0.0.1:5432/postgres] [--dry-run]
 *     [--keep DIR] [--smoke] [--https-seconds 10] [--https-connections 1] [--https-rounds 1]
 *
 * `--db` as in every harness (bench/options.ts): both when ADS_TEST_POSTGRES_URL or --pg-url gives
 * a server, else SQLite with a note; each database is seeded and measured in turn.
 *
 * Then the same queries over HTTPS (bench/search/https.ts): `ads serve` in its own process on the
 * seeded database, autocannon in another, each shape beside the bare `node:https` baseline.
 * `--https-seconds 0` skips that phase.
 * `--keep DIR` keeps the seeded database (SQLite file or PostgreSQL database, named in
 * DIR/state.json) and reuses it on the next run with the same DIR, so a measurement can be repeated
 * on a quiet machine without seeding again; it holds one database, so it needs `--db sqlite` or
 * `--db postgres`.
 * `--smoke`: 3,000 objects and 5 requests per shape, figures printed but not written: checks the
 * harness (CI), not the figures. `--no-write` and `--dry-run` also leave docs/benchmarks.md alone.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import pg from 'pg';
import { buildApp } from '../../src/app.ts';
import { type Config, loadConfig } from '../../src/config.ts';
import type { AppContext } from '../../src/context.ts';
import type { Database } from '../../src/db/database.ts';
import { asBatch } from '../../src/db/group-commit.ts';
import type { Db } from '../../src/db/types.ts';
import { newId } from '../../src/lib/ids.ts';
import { createAccount } from '../../src/modules/accounts/service.ts';
import { insertDataObject } from '../../src/modules/data/repo.ts';
import { parseFilters, parseRange } from '../../src/modules/search/params.ts';
import { buildIndexDocument, distinctWords } from '../../src/search/document.ts';
import { parseQuery } from '../../src/search/parser.ts';
import { buildPlan, vocabularyPatterns } from '../../src/search/plan.ts';
import { expandWildcards, indexDataObject, searchIndex } from '../../src/search/search-index.ts';
import { benchContext } from '../context.ts';
import { chooseDatabases, parseBenchArgs, usage, writesDocs } from '../options.ts';
import { toDataRow } from '../seed/seed.ts';
import { objectGenerator, vocabulary } from './corpus.ts';
import { httpsTable, measureOverHttps } from './https.ts';
import { pickQueries, type Shape } from './queries.ts';
import { writeSearchResults } from './report.ts';

const args = parseBenchArgs('search');
const smoke = args.boolean('smoke');
const objects = args.number('objects', smoke ? 3_000 : 100_000);
const iterations = args.number('iterations', smoke ? 5 : 200);
const { dbs, pgUrl } = chooseDatabases(args);
const write = writesDocs(args, args.boolean('dry-run') ? '--dry-run' : undefined);
const OTHER_ACCOUNTS = 9;
/** Objects in each of the other accounts: a tenth of the searched account's unless given. */
const otherObjects = args.number('other-objects', Math.round(objects / 10));
const BATCH = 500;
/** Seeding transactions in flight at once on PostgreSQL (see seed). */
const PG_LANES = 2;
const httpsOptions = {
  seconds: args.number('https-seconds', smoke ? 1 : 10),
  warmupSeconds: smoke ? 0 : 1,
  connections: args.number('https-connections', 1),
  rounds: args.number('https-rounds', 1),
};
for (const [name, n] of Object.entries(httpsOptions)) {
  // A leg needs a connection, and a row at least one round; seconds (and warm-up) may be 0.
  const min = name === 'connections' || name === 'rounds' ? 1 : 0;
  if (!Number.isInteger(n) || n < min) usage('search', `--https-${name}: a whole number >= ${min} expected`);
}

/** What a kept database needs to be measured again (`--keep`). */
interface KeptState {
  dialect: 'sqlite' | 'postgres';
  objects: number;
  otherObjects: number;
  env: Record<string, string>;
  accountId: string;
  key: string;
  seedSeconds: number;
  df: [string, number][];
}

const keep = args.string('keep');
const keepDir = keep ? path.resolve(keep) : undefined;
const statePath = keepDir ? path.join(keepDir, 'state.json') : undefined;
if (keepDir && dbs.length > 1)
  usage('search', '--keep DIR holds one database: give --db sqlite or --db postgres');

function keptState(dialect: 'sqlite' | 'postgres'): KeptState | undefined {
  if (!statePath || !fs.existsSync(statePath)) return undefined;
  const state = JSON.parse(fs.readFileSync(statePath, 'utf8')) as KeptState;
  const stateOthers = state.otherObjects ?? Math.round(state.objects / 10);
  if (state.dialect !== dialect || state.objects !== objects || stateOthers !== otherObjects) {
    throw new Error(
      `${statePath} holds ${state.objects} objects on ${state.dialect}; use another --keep DIR`,
    );
  }
  return state;
}

async function openBenchDatabase(dialect: 'sqlite' | 'postgres', kept: KeptState | undefined) {
  if (keepDir && kept) return { dataDir: keepDir, env: kept.env, drop: async () => {} };
  const dataDir = keepDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'ads-bench-search-'));
  fs.mkdirSync(dataDir, { recursive: true });
  const remove = async () => {
    if (!keepDir) fs.rmSync(dataDir, { recursive: true, force: true });
  };
  if (dialect === 'sqlite') return { dataDir, env: {}, drop: remove };
  const admin = pgUrl;
  const name = `ads_bench_search_${randomBytes(4).toString('hex')}`;
  const run = async (text: string) => {
    const c = new pg.Client({ connectionString: admin });
    await c.connect();
    try {
      await c.query(text);
    } finally {
      await c.end();
    }
  };
  await run(`CREATE DATABASE ${name}`);
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return {
    dataDir,
    env: { ADS_DATABASE_URL: url.toString() },
    drop: async () => {
      if (keepDir) return;
      await run(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await remove();
    },
  };
}

/**
 * Inserts and indexes `count` generated objects, BATCH at a time (seeding, not the API path): on
 * SQLite through group commit, as concurrent API writes are; on PostgreSQL one transaction (and one
 * vocabulary upsert) per BATCH.
 */
async function seed(
  database: Database,
  accountId: string,
  count: number,
  seedNo: number,
  words: string[],
  df?: Map<string, number>,
) {
  const next = objectGenerator(words, seedNo);
  const row = () => {
    const o = next();
    const r = toDataRow(accountId, newId('data'), o, o.created_at);
    if (df) for (const w of distinctWords(buildIndexDocument(r))) df.set(w, (df.get(w) ?? 0) + 1);
    return r;
  };
  const put = async (trx: Db, r: ReturnType<typeof row>) => {
    await insertDataObject(trx, database.dialect, r);
    await indexDataObject(trx, database.dialect, r);
  };
  // PostgreSQL: PG_LANES transactions in flight on their own connections, so the server indexes
  // one batch while this process builds the next (one lane leaves each side idle half the time).
  const lanes = database.dialect === 'sqlite' ? 1 : PG_LANES;
  let done = 0;
  let taken = 0;
  let analyzed = 0;
  const lane = async () => {
    while (taken < count) {
      const rows = Array.from({ length: Math.min(BATCH, count - taken) }, row);
      taken += rows.length;
      if (database.dialect === 'sqlite') {
        await Promise.all(rows.map((r) => database.write((trx) => put(trx, r))));
      } else {
        // One batch (as a group commit is): the vocabulary changes are summed and applied once.
        await database.db.transaction().execute((trx) =>
          asBatch(trx, async () => {
            for (const r of rows) await put(trx, r);
          }),
        );
      }
      const before = done;
      done += rows.length;
      // As autovacuum would (the servers here run without it), after the first batch and then every
      // 50,000: without statistics each connection's foreign-key check (search_documents ->
      // data_objects, planned once per connection) used the title index, account_id alone as its
      // bound, and read the account's whole index for every insert: 400 objects/s at 50,000, 100 at
      // 140,000.
      if (database.dialect === 'postgres' && (analyzed === 0 || done - analyzed >= 50_000)) {
        analyzed = done;
        await sql`VACUUM (ANALYZE) data_objects, search_documents, search_vocab, data_object_counts`.execute(
          database.db,
        );
      }
      if (count >= 100_000 && Math.floor(done / 50_000) > Math.floor(before / 50_000)) {
        console.warn(`  ${Math.floor(done / 50_000) * 50_000} / ${count}`);
      }
    }
  };
  await Promise.all(Array.from({ length: lanes }, lane));
}

/**
 * Drops the search table's GIN indexes for a PostgreSQL seed and returns what builds them again.
 * Grown one row at a time, the GIN trees outgrow the 128 MB buffer pool and each pending-list
 * flush touches pages all over them; a bulk load builds them once, sorted. What that saves at
 * 1,000,000 objects was not measured on its own (at 60,000 it was 10 %). The index measured is
 * then a freshly built one, more compact than one grown by inserts (docs/benchmarks.md).
 */
async function dropGinIndexes(database: Database) {
  const { rows } = await sql<{ name: string; def: string }>`
    SELECT indexname AS name, indexdef AS def FROM pg_indexes
    WHERE tablename = 'search_documents' AND indexdef LIKE '% USING gin %'`.execute(database.db);
  for (const r of rows) await sql`DROP INDEX ${sql.id(r.name)}`.execute(database.db);
  return async () => {
    for (const r of rows) {
      const t0 = performance.now();
      await database.db.transaction().execute(async (trx) => {
        await sql`SET LOCAL maintenance_work_mem = '1GB'`.execute(trx);
        await sql.raw(r.def).execute(trx);
      });
      console.warn(`  built ${r.name} in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
    }
  };
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

async function measure(app: FastifyInstance, ctx: AppContext, key: string, accountId: string, shape: Shape) {
  const { dialect } = ctx.database;
  const http: number[] = [];
  const raw: number[] = [];
  let hits = 0;
  const get = async (i: number) => {
    const url = `/v1/search?${shape.queries[i % shape.queries.length]!}`;
    const t0 = process.hrtime.bigint();
    const res = await app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${key}` } });
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    if (res.statusCode !== 200) throw new Error(`${url}: ${res.statusCode} ${res.body}`);
    hits += (JSON.parse(res.body) as { data: { total: number } }).data.total;
    return ms;
  };
  const direct = async (i: number) => {
    const params = new URLSearchParams(shape.queries[i % shape.queries.length]!);
    const t0 = process.hrtime.bigint();
    const ast = parseQuery(params.get('q')!);
    const { db } = ctx.database;
    const plan = buildPlan(
      ast,
      (await expandWildcards(db, dialect, accountId, vocabularyPatterns(ast))).words,
    );
    if (plan) {
      await searchIndex(db, dialect, {
        accountId,
        plan,
        filters: parseFilters(params.getAll('filter')),
        ...parseRange(params.get('from') ?? undefined, params.get('to') ?? undefined),
        sort: 'relevance',
        order: 'desc',
        limit: 20,
        offset: 0,
      });
    }
    return Number(process.hrtime.bigint() - t0) / 1e6;
  };
  // Every query of the shape once each way before measuring, so that no measured request is a
  // query's first (its pages read from disk into PostgreSQL's or the OS's cache, and faulted into
  // the backend that serves it): a long-running server has served its users' common words before.
  const warmUp = Math.max(10, shape.queries.length);
  for (let i = 0; i < warmUp; i++) {
    await get(i);
    await direct(i);
  }
  // The two run the same query back to back, so the second finds the first's pages in the cache;
  // alternating which goes first keeps that from counting as HTTP overhead.
  for (let i = 0; i < iterations; i++) {
    if (i % 2 === 0) {
      http.push(await get(i));
      raw.push(await direct(i));
    } else {
      raw.push(await direct(i));
      http.push(await get(i));
    }
  }
  http.sort((a, b) => a - b);
  raw.sort((a, b) => a - b);
  return {
    shape: shape.name,
    example: shape.queries[0]!,
    avgTotal: Math.round(hits / (iterations + warmUp)),
    http: [50, 95, 99].map((p) => percentile(http, p)),
    raw: [50, 95, 99].map((p) => percentile(raw, p)),
  };
}

async function indexSize(database: Database): Promise<number> {
  if (database.dialect === 'postgres') {
    const { rows } = await sql<{ n: number }>`
      SELECT (pg_total_relation_size('search_documents') + pg_total_relation_size('search_vocab'))::int8 AS n`.execute(
      database.db,
    );
    return Number(rows[0]!.n);
  }
  const { rows } = await sql<{ n: number }>`
    SELECT sum(pgsize) AS n FROM dbstat WHERE name LIKE 'search%'`.execute(database.db);
  return Number(rows[0]!.n);
}

/** The database engine and the cache its figures depend on, as the report's header states them. */
async function serverSettings(database: Database, config: Config): Promise<string> {
  if (database.dialect === 'postgres') {
    const { rows } = await sql<{ v: string; b: string }>`
      SELECT current_setting('server_version') AS v, current_setting('shared_buffers') AS b`.execute(
      database.db,
    );
    return `PostgreSQL ${rows[0]!.v.split(' ')[0]} with shared_buffers ${rows[0]!.b}`;
  }
  const { rows } = await sql<{ v: string }>`SELECT sqlite_version() AS v`.execute(database.db);
  const cacheMb = config.database.dialect === 'sqlite' ? config.database.cacheMb : undefined;
  return `SQLite ${rows[0]!.v} with a ${cacheMb} MiB page cache`;
}

async function main(dialect: 'sqlite' | 'postgres') {
  const kept = keptState(dialect);
  const bench = await openBenchDatabase(dialect, kept);
  const config = loadConfig({ ADS_DATA_DIR: bench.dataDir, ADS_LOG_LEVEL: 'silent', ...bench.env });
  const ctx = await benchContext(config);
  const { database } = ctx;
  const app = await buildApp(ctx);
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await app.close();
    await database.close();
  };
  try {
    let state = kept;
    if (!state) {
      const words = vocabulary(30_000);
      const main = await createAccount(database, {
        name: 'Main',
        adminEmail: 'main@x.test',
        plan: 'enterprise',
      });
      const t0 = performance.now();
      const df = new Map<string, number>();
      const rebuild = dialect === 'postgres' ? await dropGinIndexes(database) : undefined;
      await seed(database, main.account.id, objects, 1, words, df);
      for (let a = 0; a < OTHER_ACCOUNTS; a++) {
        const other = await createAccount(database, {
          name: `O${a}`,
          adminEmail: `o${a}@x.test`,
          plan: 'enterprise',
        });
        await seed(database, other.account.id, otherObjects, 100 + a, words);
      }
      await rebuild?.();
      const seedSeconds = (performance.now() - t0) / 1000;
      // As autovacuum would (the servers here run without it): statistics and the visibility map.
      if (dialect === 'postgres') await sql`VACUUM (ANALYZE)`.execute(database.db);
      console.warn(
        `seeded ${objects + OTHER_ACCOUNTS * otherObjects} objects in ${seedSeconds.toFixed(0)} s`,
      );
      state = {
        dialect,
        objects,
        otherObjects,
        env: bench.env,
        accountId: main.account.id,
        key: main.api_key.key,
        seedSeconds,
        df: [...df],
      };
      if (statePath) fs.writeFileSync(statePath, JSON.stringify(state));
    }
    const { seedSeconds } = state;
    const totalObjects = objects + OTHER_ACCOUNTS * otherObjects;

    const server = await serverSettings(database, config);
    console.warn(server);
    const shapes = pickQueries(new Map(state.df), objects);
    const results = [];
    for (const shape of shapes) {
      const r = await measure(app, ctx, state.key, state.accountId, shape);
      console.warn(
        `${r.shape.padEnd(22)} http p50/p95/p99 ${r.http.map((x) => x.toFixed(1)).join('/')} ms, raw ${r.raw.map((x) => x.toFixed(1)).join('/')} ms, ~${r.avgTotal} hits`,
      );
      results.push(r);
    }
    const indexBytes = await indexSize(database);
    // The in-process app lets go of the database before the server process takes it.
    await close();
    const https =
      httpsOptions.seconds > 0
        ? await measureOverHttps(
            shapes,
            { dataDir: bench.dataDir, env: bench.env, key: state.key, ...httpsOptions },
            (line) => console.warn(line),
          )
        : undefined;
    if (https)
      console.warn(`https: start-up to ready ${https.startupMs} ms\n${https.machine}\n${httpsTable(https)}`);
    const summary = {
      dialect,
      objects,
      totalObjects,
      iterations,
      seedSeconds,
      indexBytes,
      server,
      results,
      https,
    };
    if (write) writeSearchResults(summary);
  } finally {
    await close();
    await bench.drop();
  }
}

for (const dialect of dbs) {
  console.warn(`-- search on ${dialect}`);
  await main(dialect);
}
