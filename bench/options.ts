/**
 * The command-line rules every harness shares. `npm run bench -- <flags>` passes the same flags to
 * every harness, so each one accepts the flags of the others (and ignores them), but a flag that
 * no harness knows is refused (exit 2) rather than silently dropped. The same flag means the same
 * thing wherever it is read:
 *
 * - `--db sqlite|postgres|both`: the databases to run on. Default: both when a PostgreSQL admin
 *   URL is given (`--pg-url`, or ADS_TEST_POSTGRES_URL as CI exports it; ADS_BENCH_POSTGRES_URL is
 *   read too), else SQLite alone with a printed note saying PostgreSQL was skipped. An explicit
 *   `--db postgres|both` without a URL uses postgres://postgres@127.0.0.1:5432/postgres.
 * - docs/benchmarks.md: a run writes its section(s) unless it is `--smoke` (never writes) or
 *   `--no-write`; `--write` is accepted and is the default. (The HTTP harness also leaves the file
 *   alone for a partial `--scenarios` run, search for `--dry-run`.)
 */
import { parseArgs } from 'node:util';
import { type BenchDialect, defaultPostgresUrl } from './seed/target.ts';

/** Flags every harness reads. */
const COMMON = ['db', 'pg-url', 'smoke', 'no-write', 'write'] as const;

/** Each harness's own flags besides the common ones. */
export const HARNESS_FLAGS = {
  http: [
    ...COMMON,
    'objects',
    'seconds',
    'warmup',
    'connections',
    'scenarios',
    'startups',
    'rounds',
    'seed-index',
    'redis-url',
    'cpu-prof',
    'log-level',
  ],
  ratelimit: [...COMMON, 'seconds', 'rounds', 'redis-url'],
  search: [
    ...COMMON,
    'objects',
    'iterations',
    'dry-run',
    'keep',
    'other-objects',
    'https-seconds',
    'https-connections',
    'https-rounds',
  ],
  webhooks: [...COMMON, 'events', 'writers', 'webhooks', 'idle', 'backlog', 'fanout'],
  writes: [...COMMON, 'objects', 'rounds'],
} as const;

export type Harness = keyof typeof HARNESS_FLAGS;
type FlagOf<H extends Harness> = (typeof HARNESS_FLAGS)[H][number];

const BOOLEAN_FLAGS = new Set<string>(['smoke', 'no-write', 'write', 'seed-index', 'dry-run']);
const ALL_FLAGS = [...new Set(Object.values(HARNESS_FLAGS).flat())].sort();

/** Which harnesses read each flag, for the usage message. */
function owners(flag: string): string {
  return Object.entries(HARNESS_FLAGS)
    .filter(([, flags]) => (flags as readonly string[]).includes(flag))
    .map(([h]) => h)
    .join(', ');
}

/** Parses with every harness's flags, exiting 2 with the list of known flags on a usage mistake. */
function parseAll(argv: string[], who: string) {
  try {
    return parseArgs({
      args: argv,
      options: Object.fromEntries(
        ALL_FLAGS.map((f) => [
          f,
          { type: BOOLEAN_FLAGS.has(f) ? ('boolean' as const) : ('string' as const) },
        ]),
      ),
      strict: true,
      allowPositionals: false,
    }).values as Record<string, string | boolean | undefined>;
  } catch (err) {
    console.error(`${who}: ${(err as Error).message}`);
    console.error(
      `Flags the harnesses know: ${ALL_FLAGS.map((f) => `--${f}`).join(' ')} (docs/benchmarks.md; each harness's run.ts lists its own).`,
    );
    process.exit(2);
  }
}

/** The flags of one harness, read from argv (process.argv by default); others' flags are ignored. */
export class BenchArgs<F extends string> {
  readonly #values: Record<string, string | boolean | undefined>;
  constructor(
    readonly harness: Harness,
    values: Record<string, string | boolean | undefined>,
  ) {
    this.#values = values;
  }

  string(name: F): string | undefined {
    const v = this.#values[name];
    return typeof v === 'string' ? v : undefined;
  }

  boolean(name: F): boolean {
    return this.#values[name] === true;
  }

  /** A non-negative number, or `fallback` when the flag is absent. */
  number(name: F, fallback: number): number {
    const raw = this.string(name);
    const n = raw === undefined ? fallback : Number(raw);
    if (!Number.isFinite(n) || n < 0) usage(this.harness, `--${name} must be a non-negative number`);
    return n;
  }
}

/** Exits 2 with a one-line usage mistake. */
export function usage(harness: string, message: string): never {
  console.error(`bench ${harness}: ${message}`);
  process.exit(2);
}

export function parseBenchArgs<H extends Harness>(
  harness: H,
  argv = process.argv.slice(2),
): BenchArgs<FlagOf<H>> {
  return new BenchArgs<FlagOf<H>>(harness, parseAll(argv, `bench ${harness}`));
}

/**
 * For bench/run.ts before it starts anything: refuses (exit 2) a flag no harness knows, and warns
 * about flags none of the chosen harnesses read (they are ignored).
 */
export function checkFlagsFor(chosen: Harness[], argv: string[]): void {
  const values = parseAll(argv, 'npm run bench');
  for (const flag of Object.keys(values)) {
    if (!chosen.some((h) => (HARNESS_FLAGS[h] as readonly string[]).includes(flag))) {
      console.warn(
        `npm run bench: --${flag} is read by ${owners(flag)}, not by ${chosen.join(', ')}: ignored`,
      );
    }
  }
}

export interface DatabaseChoice {
  dbs: BenchDialect[];
  /** The PostgreSQL admin URL scratch databases are created through (unused for SQLite alone). */
  pgUrl: string;
}

/** `--db` and `--pg-url` as every harness reads them (see the top of this file). */
export function chooseDatabases(args: BenchArgs<'db' | 'pg-url'>): DatabaseChoice {
  const given =
    args.string('pg-url') ?? process.env.ADS_BENCH_POSTGRES_URL ?? process.env.ADS_TEST_POSTGRES_URL;
  const db = args.string('db') ?? (given ? 'both' : undefined);
  if (db === undefined) {
    console.warn(
      `bench ${args.harness}: SQLite only; PostgreSQL skipped (no --pg-url or ADS_TEST_POSTGRES_URL). ` +
        'Set ADS_TEST_POSTGRES_URL=postgres://… (or pass --pg-url URL, or --db both for a server on ' +
        '127.0.0.1:5432) to run it beside SQLite.',
    );
    return { dbs: ['sqlite'], pgUrl: defaultPostgresUrl() };
  }
  if (db !== 'sqlite' && db !== 'postgres' && db !== 'both') {
    usage(args.harness, `--db must be sqlite, postgres or both, not ${db}`);
  }
  return { dbs: db === 'both' ? ['sqlite', 'postgres'] : [db], pgUrl: given ?? defaultPostgresUrl() };
}

/** Whether this run writes docs/benchmarks.md: never in smoke mode or with --no-write. */
export function writesDocs(args: BenchArgs<'smoke' | 'no-write'>, partial?: string): boolean {
  const why = args.boolean('smoke') ? '--smoke' : args.boolean('no-write') ? '--no-write' : partial;
  if (why) console.warn(`bench ${args.harness}: docs/benchmarks.md not written (${why})`);
  return why === undefined;
}
