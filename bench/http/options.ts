/** Command-line flags of the HTTP harness (bench/http/run.ts documents them; bench/options.ts the shared rules). */
import { chooseDatabases, parseBenchArgs, usage, writesDocs } from '../options.ts';
import type { BenchDialect } from '../seed/target.ts';
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

/** Parses argv; the other harnesses' flags are accepted and ignored, unknown ones refused (bench/options.ts). */
export function parseHttpOptions(argv: string[]): HttpOptions {
  const args = parseBenchArgs('http', argv);
  const smoke = args.boolean('smoke');
  const { dbs, pgUrl } = chooseDatabases(args);
  const scenarioList = args.string('scenarios');
  let scenarios: Scenario[];
  try {
    scenarios = pickScenarios(scenarioList);
  } catch (err) {
    usage('http', (err as Error).message);
  }
  return {
    dbs,
    pgUrl,
    objects: Math.floor(args.number('objects', smoke ? 2_000 : 100_000)),
    seconds: args.number('seconds', smoke ? 2 : 5),
    warmupSeconds: args.number('warmup', smoke ? 0 : 1),
    connections: Math.max(1, Math.floor(args.number('connections', 10))),
    scenarios,
    smoke,
    // A smoke run or a partial run must not replace the published figures.
    write: writesDocs(args, scenarioList ? '--scenarios: a partial run' : undefined),
    startups: Math.max(1, Math.floor(args.number('startups', smoke ? 1 : 3))),
    rounds: Math.max(1, Math.floor(args.number('rounds', 1))),
    seedIndex: args.boolean('seed-index'),
    redisUrl: args.string('redis-url'),
    cpuProfDir: args.string('cpu-prof'),
    logLevel: args.string('log-level') ?? 'info',
  };
}
