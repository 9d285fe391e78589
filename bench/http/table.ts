/**
 * The HTTP results as Markdown: one row per scenario and database beside its same-run baseline, and
 * the targets for the SQLite build, each marked met or missed with the measured figure.
 * req/s (and so every ratio) counts 2xx answers only; errors have their own column.
 */
import type { LoadResult } from './load.ts';
import type { ScenarioName } from './scenarios.ts';

export interface ResultRow {
  scenario: ScenarioName;
  label: string;
  db: string;
  server: LoadResult & { peakRss: number | undefined };
  baseline: LoadResult;
  /** The Fastify floor on the same traffic (bench/http/baseline-server.ts). */
  floor: LoadResult;
  /** CPU time the hypervisor stole during the row's legs, % of the machine's (machine.ts). */
  stealPercent?: number | undefined;
}

export interface DbSummary {
  db: string;
  objects: number;
  seedRowsPerSecond: number;
  /** Spawn-to-listening times of the starts on the seeded database, ms. */
  startupsMs: number[];
  /** The machine's 1-minute load average when this database's scenarios began and ended. */
  load: [number, number];
}

const int = (n: number) => Math.round(n).toLocaleString('en');
const ms = (n: number) => (n >= 10 ? n.toFixed(0) : n.toFixed(1));
const mb = (bytes: number | undefined) => (bytes === undefined ? '?' : (bytes / 2 ** 20).toFixed(0));
const ratio = (r: ResultRow) => (r.baseline.rps > 0 ? r.server.rps / r.baseline.rps : 0);

/** Non-2xx answers and socket errors of a run. */
export const errorCount = (r: LoadResult) => r.non2xx + r.socketErrors;

/** Non-2xx answers and socket errors, with the count per status. */
export function errorsCell(r: LoadResult): string {
  const total = errorCount(r);
  if (total === 0) return '0';
  const detail = Object.entries(r.statusCounts)
    .filter(([code]) => !code.startsWith('2'))
    .map(([code, n]) => `${int(n)}×${code}`);
  if (r.socketErrors) detail.push(`${int(r.socketErrors)} socket`);
  return `${int(total)} (${detail.join(', ')})`;
}

const floorRatio = (r: ResultRow) => (r.baseline.rps > 0 ? r.floor.rps / r.baseline.rps : 0);

/** CPU steal during a row (machine.ts stealPercent), or a dash where it could not be read. */
export const stealCell = (percent: number | undefined) =>
  percent === undefined ? '–' : `${percent.toFixed(0)} %`;

/** A row's server figures: req/s, p50, p95, p99, errors, peak RSS (MB). */
export function serverCells(m: LoadResult & { peakRss: number | undefined }): string[] {
  return [int(m.rps), ms(m.p50), ms(m.p95), ms(m.p99), errorsCell(m), mb(m.peakRss)];
}

/** A row's baseline figures: req/s, p99, and the server's req/s as a ratio of the baseline's. */
export function baselineCells(server: LoadResult, baseline: LoadResult): string[] {
  const ratio = baseline.rps > 0 ? server.rps / baseline.rps : 0;
  return [int(baseline.rps), ms(baseline.p99), `${ratio.toFixed(2)}×`];
}

/** The main table: server figures, the baseline's req/s and the ratio, then the Fastify floor's. */
export function resultsTable(rows: ResultRow[]): string {
  const head = [
    '| scenario | db | req/s | p50 ms | p95 ms | p99 ms | errors | peak RSS MB | baseline req/s | baseline p99 ms | ratio | Fastify floor req/s | floor ratio | CPU steal |',
    '|---|---|--:|--:|--:|--:|---|--:|--:|--:|--:|--:|--:|--:|',
  ];
  const body = rows.map((r) =>
    [
      r.label,
      r.db,
      ...serverCells(r.server),
      ...baselineCells(r.server, r.baseline),
      int(r.floor.rps),
      `${floorRatio(r).toFixed(2)}×`,
      stealCell(r.stealPercent),
    ].join(' | '),
  );
  return [...head, ...body.map((line) => `| ${line} |`)].join('\n');
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.floor(s.length / 2)]! : Number.NaN;
}

/** Seeding speed and start-up to ready per database. */
export function setupTable(dbs: DbSummary[]): string {
  const head = [
    '| db | objects | seeding rows/s | start-up to ready, median ms | all starts ms | load avg before → after |',
    '|---|--:|--:|--:|---|---|',
  ];
  const body = dbs.map(
    (d) =>
      `| ${d.db} | ${int(d.objects)} | ${int(d.seedRowsPerSecond)} | ${int(median(d.startupsMs))} | ${d.startupsMs
        .map(int)
        .join(', ')} | ${d.load[0].toFixed(1)} → ${d.load[1].toFixed(1)} |`,
  );
  return [...head, ...body].join('\n');
}

interface Target {
  what: string;
  goal: string;
  measured: string;
  met: boolean | undefined;
}

/** The HTTP targets, evaluated on the SQLite rows (targets are stated for the SQLite build). */
export function targetsTable(rows: ResultRow[], dbs: DbSummary[]): string {
  const sqlite = rows.filter((r) => r.db === 'sqlite');
  const find = (name: ScenarioName) => sqlite.find((r) => r.scenario === name);
  const targets: Target[] = [];
  // req/s counts 2xx answers only; a row with errors (server or baseline) cannot meet a target,
  // whatever its ratio: the errors are named in the measured cell.
  const ratioTarget = (name: ScenarioName, min: number) => {
    const r = find(name);
    const errors = r ? errorCount(r.server) + errorCount(r.baseline) : 0;
    const errorNote =
      r && errors > 0 ? `; ${errorsCell(r.server)} errors, baseline ${errorsCell(r.baseline)}` : '';
    targets.push({
      what: `${r?.label ?? name} vs baseline req/s (2xx only)`,
      goal: `≥ ${min}×, no errors`,
      measured: r
        ? `${ratio(r).toFixed(2)}× (${int(r.server.rps)} / ${int(r.baseline.rps)})${errorNote}`
        : 'not run',
      met: r ? ratio(r) >= min && errors === 0 : undefined,
    });
  };
  ratioTarget('get-item', 0.5);
  ratioTarget('list-date', 0.35);
  ratioTarget('list-title', 0.35);
  ratioTarget('create', 0.3);
  const sqliteDb = dbs.find((d) => d.db === 'sqlite');
  const peaks = sqlite.map((r) => r.server.peakRss).filter((x): x is number => x !== undefined);
  const peak = peaks.length ? Math.max(...peaks) : undefined;
  const at = sqliteDb ? ` at ${int(sqliteDb.objects)} objects` : '';
  targets.push({
    what: `server peak RSS over every scenario${at} (target stated at 1,000,000)`,
    goal: '< 300 MB',
    measured: peak === undefined ? 'not measured' : `${mb(peak)} MB`,
    met: peak === undefined ? undefined : peak < 300 * 2 ** 20,
  });
  const startup = sqliteDb ? median(sqliteDb.startupsMs) : Number.NaN;
  targets.push({
    what: `start-up to ready${at} (target stated at 1,000,000)`,
    goal: '< 1,000 ms',
    measured: Number.isFinite(startup) ? `${int(startup)} ms (median)` : 'not measured',
    met: Number.isFinite(startup) ? startup < 1000 : undefined,
  });
  const head = ['| target (SQLite) | goal | measured | met? |', '|---|---|---|---|'];
  const mark = (m: boolean | undefined) => (m === undefined ? 'not measured' : m ? 'met' : '**missed**');
  return [...head, ...targets.map((t) => `| ${t.what} | ${t.goal} | ${t.measured} | ${mark(t.met)} |`)].join(
    '\n',
  );
}
