/** Command-line flags of the HTTP harness (bench/http/run.ts documents them). */
import { parseArgs } from 'node:util';
import { type BenchDialect, defaultPostgresUrl } from '../seed/target.ts';
import { pickScenarios, type Scenario } from './scenarios.ts';

export interface HttpOptions {
  dbs: BenchDialect[];
  pgUrl: string;
  objects: number;
  seconds: number;
  warmupSeconds: number;
  connections: number;
  scenarios: Scenario[];
  smoke: boolean;
  write: boolean;
  startups: number;
  /** Baseline and server legs per row, alternating; the row reports their medians. */
  rounds: number;
  seedIndex: boolean;
  redisUrl: string | undefined;
  cpuProfDir: string | undefined;
  logLevel: string;
}

/** Parses argv; unknown flags are ignored because `npm run bench` passes the same flags to every scenario. */
export function parseHttpOptions(argv: string[]): HttpOptions {
  const { values } = parseArgs({
    args: argv,
    options: {
      db: { type: 'string' },
      'pg-url': { type: 'string' },
      objects: { type: 'string' },
      seconds: { type: 'string' },
      warmup: { type: 'string' },
      connections: { type: 'string', default: '10' },
      scenarios: { type: 'string' },
      smoke: { type: 'boolean', default: false },
      'no-write': { type: 'boolean', default: false },
      startups: { type: 'string' },
      rounds: { type: 'string' },
      'seed-index': { type: 'boolean', default: false },
      'redis-url': { type: 'string' },
      'cpu-prof': { type: 'string' },
      'log-level': { type: 'string', default: 'info' },
    },
    strict: false,
  });
  const smoke = values.smoke === true;
  const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
  const num = (v: unknown, fallback: number, name: string) => {
    const n = Number(str(v) ?? fallback);
    if (!Number.isFinite(n) || n < 0) throw new Error(`--${name} must be a non-negative number`);
    return n;
  };
  const pgUrlGiven = str(values['pg-url']) ?? process.env.ADS_TEST_POSTGRES_URL;
  const db = str(values.db) ?? (pgUrlGiven ? 'both' : 'sqlite');
  if (!['sqlite', 'postgres', 'both'].includes(db)) throw new Error('--db must be sqlite, postgres or both');
  const dbs: BenchDialect[] = db === 'both' ? ['sqlite', 'postgres'] : [db as BenchDialect];
  const scenarioList = str(values.scenarios);
  return {
    dbs,
    pgUrl: pgUrlGiven ?? defaultPostgresUrl(),
    objects: Math.floor(num(values.objects, smoke ? 2_000 : 100_000, 'objects')),
    seconds: num(values.seconds, smoke ? 2 : 5, 'seconds'),
    warmupSeconds: num(values.warmup, smoke ? 0 : 1, 'warmup'),
    connections: Math.max(1, Math.floor(num(values.connections, 10, 'connections'))),
    scenarios: pickScenarios(scenarioList),
    smoke,
    // A smoke run or a partial run must not replace the published figures.
    write: !smoke && !scenarioList && values['no-write'] !== true,
    startups: Math.max(1, Math.floor(num(values.startups, smoke ? 1 : 3, 'startups'))),
    rounds: Math.max(1, Math.floor(num(values.rounds, 1, 'rounds'))),
    seedIndex: values['seed-index'] === true,
    redisUrl: str(values['redis-url']),
    cpuProfDir: str(values['cpu-prof']),
    logLevel: str(values['log-level']) ?? 'info',
  };
}
