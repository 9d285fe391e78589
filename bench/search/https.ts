/**
 * `GET /v1/search` over HTTPS against the real server: `ads serve` in its own process on the seeded
 * search database, autocannon in another (bench/http/driver.ts), and in the same run the bare
 * `node:https` baseline answering every request with a body of the size the server's answers to that
 * shape have (their median). Per shape: req/s, p50/p95/p99, errors, the server's peak RSS and the
 * ratio to the baseline; once: start-up to ready on this database.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Agent, request } from 'undici';
import { loadConfig } from '../../src/config.ts';
import { loadTls } from '../../src/lib/tls.ts';
import { type BaselineRoute, launchBaseline } from '../http/baseline.ts';
import { type LoadResult, medianLoad, runLoad } from '../http/load.ts';
import { cpuTimes, describeMachine, stealPercent } from '../http/machine.ts';
import { OWN_HEADERS } from '../http/probe.ts';
import type { LoadJob } from '../http/requests.ts';
import { buildBundle, launchServer, type ServerProcess } from '../http/server.ts';
import { baselineCells, serverCells, stealCell } from '../http/table.ts';
import type { Shape } from './queries.ts';

export interface HttpsOptions {
  dataDir: string;
  /** ADS_* settings of the seeded database (ADS_DATABASE_URL on PostgreSQL; none for SQLite). */
  env: Record<string, string>;
  /** An enterprise key of the searched account (no rate limit). */
  key: string;
  seconds: number;
  warmupSeconds: number;
  connections: number;
  /** Baseline and server legs per shape, alternating; the row takes their medians. */
  rounds: number;
}

export interface HttpsRow {
  shape: string;
  /** Median answer size of the shape's queries, bytes. */
  bytes: number;
  server: LoadResult & { peakRss: number | undefined };
  baseline: LoadResult;
  /** CPU time the hypervisor stole during the row's legs, % (machine.ts). */
  stealPercent: number | undefined;
}

export interface HttpsSummary {
  /** The machine, its software and the date (bench/http/machine.ts). */
  machine: string;
  connections: number;
  seconds: number;
  rounds: number;
  startupMs: number;
  rows: HttpsRow[];
}

/** Each query of the shape once: fails on a non-200 answer, returns the median answer as a baseline route. */
async function probe(url: string, ca: Buffer, key: string, shape: Shape): Promise<BaselineRoute> {
  const dispatcher = new Agent({ connect: { ca, servername: 'localhost' } });
  try {
    const answers: BaselineRoute[] = [];
    for (const query of shape.queries) {
      const res = await request(`${url}/v1/search?${query}`, {
        headers: { authorization: `Bearer ${key}` },
        dispatcher,
      });
      const body = Buffer.from(await res.body.arrayBuffer());
      if (res.statusCode !== 200) throw new Error(`search ${query} answered ${res.statusCode}: ${body}`);
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(res.headers)) {
        if (!OWN_HEADERS.has(name) && value !== undefined) headers[name] = String(value);
      }
      answers.push({ status: 200, bytes: body.length, headers });
    }
    answers.sort((a, b) => a.bytes - b.bytes);
    return answers[Math.floor(answers.length / 2)]!;
  } finally {
    await dispatcher.close();
  }
}

/** Runs every shape over HTTPS; `log` gets one line per row as it is measured. */
export async function measureOverHttps(
  shapes: Shape[],
  opts: HttpsOptions,
  log: (line: string) => void,
): Promise<HttpsSummary> {
  const config = loadConfig({ ADS_DATA_DIR: opts.dataDir, ...opts.env });
  await loadTls(config); // made before the start is timed, as a first start would have made it
  const certFile = path.join(config.dataDir, 'tls/cert.pem');
  const keyFile = path.join(config.dataDir, 'tls/key.pem');
  const ca = fs.readFileSync(certFile);
  const work = fs.mkdtempSync(path.join(opts.dataDir, 'https-'));
  let server: ServerProcess | undefined;
  try {
    buildBundle();
    server = await launchServer({
      dataDir: opts.dataDir,
      databaseUrl: opts.env.ADS_DATABASE_URL ?? path.join(opts.dataDir, 'ads.sqlite'),
      logFile: path.join(work, 'server.log'),
    });
    const rows: HttpsRow[] = [];
    const emptyIds = path.join(work, 'no-ids.txt');
    fs.writeFileSync(emptyIds, '');
    const jobFile = path.join(work, 'job.json');
    const job = (url: string, label: string, paths: string[], seconds: number): LoadJob => ({
      url,
      caFile: certFile,
      label,
      cycle: ['search'],
      seconds,
      warmupSeconds: opts.warmupSeconds,
      connections: opts.connections,
      keys: [opts.key],
      readIdsFile: emptyIds,
      deleteIdsFile: emptyIds,
      seed: 23,
      searchPaths: paths,
    });
    const pathsOf = (shape: Shape) => shape.queries.map((q) => `/v1/search?${q}`);
    if (opts.warmupSeconds > 0) {
      // The server's code is cold after start-up: one unmeasured pass over every shape (3× the
      // per-leg warm-up) so the first shape is not measured against a cold JIT while later ones are not.
      const all = shapes.flatMap(pathsOf);
      await runLoad(job(server.url, 'search warm-up', all, opts.warmupSeconds * 3), jobFile, server.pid);
    }
    for (const shape of shapes) {
      // The probe also serves every query once before the row, as the in-process phase does.
      const route = await probe(server.url, ca, opts.key, shape);
      const baseline = await launchBaseline(
        { certFile, keyFile, routes: { search: route } },
        path.join(work, `baseline-${shape.name.replace(/\W+/g, '-')}.json`),
      );
      try {
        const leg = (url: string) => job(url, `search ${shape.name}`, pathsOf(shape), opts.seconds);
        const baseLegs: LoadResult[] = [];
        const serverLegs: Array<LoadResult & { peakRss: number | undefined }> = [];
        const cpuBefore = cpuTimes();
        for (let r = 0; r < opts.rounds; r++) {
          baseLegs.push(await runLoad(leg(baseline.url), jobFile, baseline.pid));
          serverLegs.push(await runLoad(leg(server.url), jobFile, server.pid));
        }
        const row = {
          shape: shape.name,
          bytes: route.bytes,
          server: medianLoad(serverLegs),
          baseline: medianLoad(baseLegs),
          stealPercent: stealPercent(cpuBefore, cpuTimes()),
        };
        rows.push(row);
        log(describe(row));
      } finally {
        await baseline.stop();
      }
    }
    return {
      machine: await describeMachine(opts.env.ADS_DATABASE_URL),
      connections: opts.connections,
      seconds: opts.seconds,
      rounds: opts.rounds,
      startupMs: server.startupMs,
      rows,
    };
  } finally {
    await server?.stop();
    fs.rmSync(work, { recursive: true, force: true });
  }
}

const mb = (bytes: number | undefined) => (bytes === undefined ? '?' : (bytes / 2 ** 20).toFixed(0));
const ms = (n: number) => (n >= 10 ? n.toFixed(0) : n.toFixed(1));
const int = (n: number) => Math.round(n).toLocaleString('en');

function describe(r: HttpsRow): string {
  const s = r.server;
  return (
    `https ${r.shape.padEnd(22)} ${int(s.rps).padStart(6)} req/s p50/p95/p99 ${ms(s.p50)}/${ms(s.p95)}/${ms(s.p99)} ms, ` +
    `${s.non2xx + s.socketErrors} errors, RSS ${mb(s.peakRss)} MB | baseline ${int(r.baseline.rps)} req/s`
  );
}

/** The rows as a Markdown table. */
export function httpsTable(summary: HttpsSummary): string {
  return [
    '| Query shape | req/s | p50 ms | p95 ms | p99 ms | errors | peak RSS MB | answer bytes | baseline req/s | baseline p99 ms | ratio | CPU steal |',
    '|---|--:|--:|--:|--:|---|--:|--:|--:|--:|--:|--:|',
    ...summary.rows.map(
      (r) =>
        `| ${[r.shape, ...serverCells(r.server), r.bytes.toLocaleString('en'), ...baselineCells(r.server, r.baseline), stealCell(r.stealPercent)].join(' | ')} |`,
    ),
  ].join('\n');
}
