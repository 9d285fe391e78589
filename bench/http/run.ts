/**
 * HTTP load against the real server beside a same-run baseline. Per database: seed one account
 * (bench/seed, its own process), start `ads serve` as its own process (timing start-up to ready),
 * start the bare `node:https` baseline and the Fastify floor as two more, then for each scenario
 * drive all three from another process (autocannon over HTTPS on loopback, same settings) and
 * record req/s (2xx answers only), latency, errors and the server's peak RSS. Prints the tables and
 * writes the `## HTTP` and `## Machine` sections of docs/benchmarks.md (not with --smoke, --no-write
 * or --scenarios).
 *
 *   npm run bench -- http [--db sqlite|postgres|both] [--objects 100000] [--seconds 5] [--warmup 1]
 *     [--connections 10] [--scenarios get-item,create,...] [--startups 3] [--rounds 1] [--seed-index]
 *     [--pg-url ADMIN_URL] [--redis-url URL] [--cpu-prof DIR] [--log-level info] [--no-write] [--smoke]
 *
 * `--db` defaults to both when a PostgreSQL URL is given (--pg-url or ADS_TEST_POSTGRES_URL), else
 * SQLite with a note (bench/options.ts: the same in every harness, which also ignore each other's flags).
 * `--smoke`: 2,000 objects, 2 s per run, no warm-up, one start: checks the harness, not the figures.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { writeBenchSection } from '../report.ts';
import type { SeedResult } from '../seed/seed.ts';
import { type BenchTarget, createTarget } from '../seed/target.ts';
import { type BaselineProcess, launchBaseline } from './baseline.ts';
import { writeHttpSection } from './docs.ts';
import { prepareFixtures, switchPlan } from './fixtures.ts';
import { type LoadResult, medianLoad, runLoad } from './load.ts';
import { cpuTimes, describeMachine, stealPercent } from './machine.ts';
import { type HttpOptions, parseHttpOptions } from './options.ts';
import { probeSizes } from './probe.ts';
import type { LoadJob } from './requests.ts';
import type { Scenario } from './scenarios.ts';
import { buildBundle, launchServer, type ServerProcess } from './server.ts';
import {
  type DbSummary,
  type ResultRow,
  resultsTable,
  setupTable,
  stealCell,
  targetsTable,
} from './table.ts';

const SEED = path.resolve(import.meta.dirname, '../seed/run.ts');
// Pro keys allow 300 requests per minute each: give each rate-limited scenario its own pool, sized
// so that even 25,000 req/s for the whole run stays under 250 per key (the server has answered
// 16,700 GET /data/{id} a second on a fast machine, where a pool sized for 8,000 ran into 429s).
// Three such scenarios at 5 s + 1 s of warm-up and 3 rounds take 5,400 keys, within the server's
// key cache (auth.ts).
const PRO_PER_MINUTE_SAFE = 250;
const ASSUMED_MAX_RPS = 25_000;
const READ_IDS = 10_000;
/**
 * Objects DELETE may remove, each indexed before the run (fixtures.ts): more than one leg deletes
 * (an indexed DELETE ran at a few thousand per second at most).
 */
const DELETE_IDS = 30_000;

const opts = parseHttpOptions(process.argv.slice(2));
const log = (line: string) => process.stderr.write(`${line}\n`);

// Whatever is running when the run is interrupted: stopped (server, baseline) and dropped (database).
const cleanups = new Set<() => Promise<unknown>>();
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    Promise.allSettled([...cleanups].map((c) => c())).finally(() => process.exit(130));
  });
}

function seed(target: BenchTarget): Promise<SeedResult> {
  const args = [
    '--import',
    'tsx',
    SEED,
    '--data-dir',
    target.dataDir,
    '--database-url',
    target.databaseUrl,
    '--objects',
    String(opts.objects),
    '--json',
    ...(opts.seedIndex ? ['--index'] : []),
  ];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d) => {
    out += d;
  });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => {
      if (code !== 0) reject(new Error(`seeding exited with ${code}`));
      else resolve(JSON.parse(out.trim().split('\n').pop()!) as SeedResult);
    });
  });
}

async function runDatabase(dialect: BenchTarget['dialect'], rows: ResultRow[], dbs: DbSummary[]) {
  const target = await createTarget(dialect, opts.pgUrl);
  let server: ServerProcess | undefined;
  let baseline: BaselineProcess | undefined;
  let floor: BaselineProcess | undefined;
  const cleanup = async () => {
    await baseline?.stop();
    await floor?.stop();
    await server?.stop();
    await target.drop();
  };
  cleanups.add(cleanup);
  try {
    const seeded = await seed(target);
    const rlScenarios = opts.scenarios.filter((s) => s.rateLimited).length;
    const pool = Math.max(
      8,
      Math.ceil((ASSUMED_MAX_RPS * (opts.seconds + opts.warmupSeconds) * opts.rounds) / PRO_PER_MINUTE_SAFE),
    );
    const fixtures = await prepareFixtures(target, seeded, {
      keyCount: Math.max(pool, pool * rlScenarios),
      readMax: READ_IDS,
      deleteMax: DELETE_IDS,
      index: !opts.seedIndex,
    });
    const launch = () =>
      launchServer({
        dataDir: target.dataDir,
        databaseUrl: target.databaseUrl,
        logFile: path.join(target.dataDir, 'server.log'),
        env: { ADS_LOG_LEVEL: opts.logLevel, ...(opts.redisUrl ? { ADS_REDIS_URL: opts.redisUrl } : {}) },
        nodeArgs: opts.cpuProfDir ? ['--cpu-prof', `--cpu-prof-dir=${opts.cpuProfDir}`] : [],
      });
    const startupsMs: number[] = [];
    for (let i = 0; i < opts.startups; i++) {
      if (server) await server.stop();
      server = await launch();
      startupsMs.push(server.startupMs);
    }
    const label = opts.redisUrl ? `${dialect}+redis` : dialect;
    const summary: DbSummary = {
      db: label,
      objects: opts.objects,
      seedRowsPerSecond: seeded.rowsPerSecond,
      startupsMs,
      load: [os.loadavg()[0]!, 0],
    };
    dbs.push(summary);
    log(`${label}: start-up to ready ${startupsMs.map((ms) => `${ms} ms`).join(', ')}`);
    const readIds = fs.readFileSync(fixtures.readIdsFile, 'utf8').split('\n').filter(Boolean);
    const routes = await probeSizes(server!.url, fixtures.certFile, seeded.apiKey, readIds);
    baseline = await launchBaseline(
      { certFile: fixtures.certFile, keyFile: fixtures.keyFile, routes },
      path.join(target.dataDir, 'baseline-spec.json'),
    );
    floor = await launchBaseline(
      { certFile: fixtures.certFile, keyFile: fixtures.keyFile, routes, framework: 'fastify' },
      path.join(target.dataDir, 'floor-spec.json'),
    );
    const baselines = new Map<string, { base: LoadResult; floor: LoadResult }>();
    if (opts.warmupSeconds > 0) {
      // The server's code is still cold after start-up: one unmeasured read pass (3× the per-row
      // warm-up) so the first scenario is not measured against a cold JIT while later ones are not.
      await runLoad(
        {
          url: server!.url,
          caFile: fixtures.certFile,
          label: 'server warm-up',
          cycle: ['get-item', 'list-date', 'list-title'],
          seconds: opts.warmupSeconds * 3,
          warmupSeconds: 0,
          connections: opts.connections,
          keys: fixtures.keys,
          readIdsFile: fixtures.readIdsFile,
          deleteIdsFile: fixtures.deleteIdsFile,
          seed: 5,
        },
        path.join(target.dataDir, 'job-warm-up.json'),
        server!.pid,
      );
    }
    let plan: 'pro' | 'enterprise' = 'enterprise';
    let rlIndex = 0;
    for (const scenario of opts.scenarios) {
      const wanted = scenario.rateLimited ? 'pro' : 'enterprise';
      if (plan !== wanted) {
        await switchPlan(target, seeded.accountId, wanted);
        plan = wanted;
      }
      const keys = scenario.rateLimited
        ? fixtures.keys.slice(rlIndex * pool, ++rlIndex * pool)
        : fixtures.keys;
      const job = (url: string, endsWithDeleteList = false): LoadJob => ({
        url,
        endsWithDeleteList,
        caFile: fixtures.certFile,
        label: scenario.label,
        cycle: scenario.cycle,
        seconds: opts.seconds,
        warmupSeconds: opts.warmupSeconds,
        connections: opts.connections,
        keys,
        readIdsFile: fixtures.readIdsFile,
        deleteIdsFile: fixtures.deleteIdsFile,
        seed: 17,
      });
      const jobFile = path.join(target.dataDir, `job-${scenario.name}.json`);
      const cycleKey = scenario.cycle.join(',');
      // The rate-limited reads send what the plain reads sent: their baseline and floor are the
      // same run's. With --rounds, baseline, floor and server legs alternate and the row takes
      // their medians (a DELETE row runs once: its id list is used up by the first leg).
      const rounds = scenario.cycle.includes('delete') ? 1 : opts.rounds;
      const cached = baselines.get(cycleKey);
      const baseLegs: LoadResult[] = [];
      const floorLegs: LoadResult[] = [];
      const serverLegs: Array<LoadResult & { peakRss: number | undefined }> = [];
      const cpuBefore = cpuTimes();
      for (let r = 0; r < rounds; r++) {
        if (!cached) {
          baseLegs.push(await runLoad(job(baseline.url), jobFile, baseline.pid));
          floorLegs.push(await runLoad(job(floor.url), jobFile, floor.pid));
        }
        serverLegs.push(await runLoad(job(server!.url, true), jobFile, server!.pid));
      }
      const same = cached ?? { base: medianLoad(baseLegs), floor: medianLoad(floorLegs) };
      baselines.set(cycleKey, same);
      const measured = medianLoad(serverLegs);
      const steal = stealPercent(cpuBefore, cpuTimes());
      rows.push({
        scenario: scenario.name,
        label: scenario.label,
        db: label,
        server: measured,
        baseline: same.base,
        floor: same.floor,
        stealPercent: steal,
      });
      const stolen = steal === undefined ? '' : `, CPU steal ${stealCell(steal)}`;
      log(`${describeRow(label, scenario, measured, same.base, same.floor)}${stolen}`);
    }
    summary.load[1] = os.loadavg()[0]!;
  } finally {
    cleanups.delete(cleanup);
    await cleanup();
  }
}

function describeRow(
  db: string,
  s: Scenario,
  m: LoadResult & { peakRss?: number },
  b: LoadResult,
  f: LoadResult,
) {
  const errors = m.non2xx + m.socketErrors;
  const rss = m.peakRss === undefined ? '?' : (m.peakRss / 2 ** 20).toFixed(0);
  const of = (x: LoadResult) => (x.rps / Math.max(b.rps, 1e-9)).toFixed(2);
  return (
    `${db.padEnd(8)} ${s.label.padEnd(40)} ${Math.round(m.rps).toString().padStart(6)} req/s ` +
    `p50 ${m.p50.toFixed(1)} p95 ${m.p95.toFixed(1)} p99 ${m.p99.toFixed(1)} ms, ${errors} errors, ` +
    `RSS ${rss} MB | baseline ${Math.round(b.rps)} req/s -> ${of(m)}x | Fastify floor ` +
    `${Math.round(f.rps)} req/s (${of(f)}x)`
  );
}

const INTRO = [
  'Every row: `ads serve` on a seeded database in its own process (logging at `info` to a file, as an',
  'operator would run it), autocannon in a second process over HTTPS on loopback with keep-alive, and in',
  'the same run the **baseline**: a bare `node:https` server in a third process, same certificate,',
  'answering each request with a fixed JSON body of the size the real server gave to that request (writes:',
  'the body read to its end, then 201/200/204), driven with the same settings. req/s counts 2xx answers',
  'only (a 429, 401, 404 or 500 is not throughput), and `ratio` = server req/s ÷ baseline req/s. Errors',
  'count non-2xx answers and socket errors; a row with errors cannot meet a target, whatever its ratio.',
  "Latency percentiles are over 2xx answers; peak RSS is the server process's high-water mark during the",
  'row (Linux VmHWM, reset per row).',
  'The **Fastify floor**, in a fourth process and driven the same way, is Fastify 5 (the framework the',
  'service is built on) with the same TLS settings and one route answering the same bodies with the real',
  "server's response headers (the JSON body parsed, no logging, hooks, auth or database): `floor ratio` =",
  'floor req/s ÷ baseline req/s, the most any service on this framework could reach for that row.',
  'One account holds every object (content ~0.7–1.3 KB from a fixed-seed word generator); seeded objects',
  'are written in batched inserts without search-index entries, except the 10,000 that reads and PATCH',
  'draw from and the 30,000 DELETE removes, which are indexed before the run through the code `POST`',
  'runs, so PATCH and DELETE pay the removal of an old entry (FTS5 secure delete) as on objects created',
  'through the API (`--seed-index` indexes the whole seed, slower). Pro rows: the account on the pro plan and each',
  'scenario with its own pool of keys, so limits are counted on every request but never reached. Writes',
  'are durable (SQLite WAL with `synchronous=FULL`; PostgreSQL defaults, `fsync` on). Client, server and',
  'database share the 2 cores, and other work on the machine shows in the load averages: compare a row',
  "with its own baseline rather than across runs. Targets are the issue's, for the SQLite build.",
  'The server starts from the start-up bundle (bin/bundle.mjs, built at the start of the run as',
  '`npm install` builds it); start-up to ready runs from spawning `node bin/ads.js serve` to its',
  '`listening` log line. Before the first row the server gets one unmeasured read pass of three times',
  "the per-row warm-up, so the first scenario does not meet a cold JIT that later ones don't.",
].join('\n');

function block(options: HttpOptions, rows: ResultRow[], dbs: DbSummary[], machine: string): string {
  const dbFlag = options.dbs.length > 1 ? 'both' : options.dbs[0];
  return [
    `Machine: ${machine}`,
    '',
    `${options.scenarios.length} scenarios × ${options.dbs.join(' and ')}; each row ${options.seconds} s after ` +
      `${options.warmupSeconds} s of warm-up, ${options.connections} connections` +
      (options.rounds > 1
        ? `, median of ${options.rounds} alternating baseline, floor and server legs (DELETE: one leg)`
        : '') +
      `. Command: \`npm run bench -- http --db ${dbFlag} --objects ${options.objects}` +
      `${options.rounds > 1 ? ` --rounds ${options.rounds}` : ''}\`.`,
    '',
    resultsTable(rows),
    '',
    setupTable(dbs),
    '',
    targetsTable(rows, dbs),
  ].join('\n');
}

buildBundle();

const rows: ResultRow[] = [];
const dbs: DbSummary[] = [];
for (const dialect of opts.dbs) await runDatabase(dialect, rows, dbs);
const machine = await describeMachine(opts.dbs.includes('postgres') ? opts.pgUrl : undefined);
const text = block(opts, rows, dbs, machine);
process.stdout.write(`\n${text}\n`);
if (opts.write) {
  writeBenchSection('Machine', machine);
  writeHttpSection(INTRO, opts.objects, text);
}
