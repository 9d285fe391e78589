/**
 * What rate limiting costs a request: one server process (bench/ratelimit/server.ts), one route
 * (`GET /v1/data`), driven by autocannon over HTTPS on loopback from this process, alternately with an
 * enterprise key (no counters) and a pro key (minute and day counters consumed on every request).
 * Counters in memory and, with a Redis URL (--redis-url, ADS_REDIS_URL or ADS_TEST_REDIS_URL as CI
 * exports it), in Redis; on SQLite and PostgreSQL (`--db`, as in every harness: bench/options.ts).
 * A separate server process for each database and counter backend.
 *
 * Noise control for a shared machine: the keys alternate on the same warm server, in rotating order
 * over several rounds, and each round gives its own ratio; the table shows the median and the range.
 * Every round also repeats the enterprise leg (A/A control): the spread of that ratio is the noise floor.
 * Besides throughput, the server process's CPU time per request is read before and after every leg
 * (process.cpuUsage() in the server): it is far less sensitive to other load than req/s.
 *
 *   npm run bench -- ratelimit [--db sqlite|postgres|both] [--pg-url ADMIN_URL] [--redis-url URL]
 *     [--seconds 2] [--rounds 6] [--no-write] [--smoke]
 *
 * req/s counts 2xx answers only and latency is over 2xx answers; any other answer (a 429 if the
 * limiter ever refused) is reported in the errors column with its status.
 * `--smoke`: 1 s legs, one round, a short micro-benchmark and nothing written: checks the harness
 * (CI), not the figures. Otherwise the `## Rate limiting` section of docs/benchmarks.md is
 * rewritten (its notes kept).
 */
import { type ChildProcess, fork } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import autocannon from 'autocannon';
import { chooseDatabases, parseBenchArgs, writesDocs } from '../options.ts';
import { writeBenchSection } from '../report.ts';
import { type BenchDialect, createTarget } from '../seed/target.ts';
import { CALLERS, type MicroResult, microBench } from './micro.ts';

const args = parseBenchArgs('ratelimit');
const smoke = args.boolean('smoke');
const seconds = args.number('seconds', smoke ? 1 : 2);
const rounds = Math.max(1, Math.floor(args.number('rounds', smoke ? 1 : 6)));
const { dbs, pgUrl } = chooseDatabases(args);
const redisUrl = args.string('redis-url') ?? process.env.ADS_REDIS_URL ?? process.env.ADS_TEST_REDIS_URL;
if (!redisUrl) {
  console.warn(
    'bench ratelimit: memory counters only; set ADS_TEST_REDIS_URL (or ADS_REDIS_URL, or --redis-url) for the Redis rows',
  );
}
const write = writesDocs(args);
const CONNECTIONS = 10;

type Ready = { url: string; keys: { enterprise: string; pro: string } };
type Cpu = { cpu: NodeJS.CpuUsage; degraded: boolean };
type Leg = {
  /** 2xx answers per second. */
  rps: number;
  /** Answers of every status. */
  requests: number;
  /** Latency of 2xx answers, ms. */
  p50: number;
  p99: number;
  /** Non-2xx answers and socket errors. */
  errors: number;
  /** Answers per non-2xx status. */
  refused: Record<string, number>;
  cpuUs: number;
  /** CPU of this (load generator) process per request: more response headers cost the client too. */
  clientCpuUs: number;
};

/** Sends one message to the server and waits for its answer. */
async function ask<T>(child: ChildProcess, msg: string): Promise<T> {
  const reply = once(child, 'message') as Promise<[T]>;
  child.send(msg);
  return (await reply)[0];
}

async function startServer(redisUrl: string | undefined, databaseUrl: string | undefined) {
  const child = fork(new URL('./server.ts', import.meta.url), {
    execArgv: ['--import', 'tsx'],
    env: { ...process.env, BENCH_REDIS_URL: redisUrl ?? '', BENCH_DATABASE_URL: databaseUrl ?? '' },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const exited = once(child, 'exit').then(([code]) => {
    throw new Error(`bench server exited early (code ${code})`);
  });
  const [ready] = (await Promise.race([once(child, 'message'), exited])) as [Ready];
  exited.catch(() => {});
  return { child, ...ready };
}

async function leg(server: Awaited<ReturnType<typeof startServer>>, key: string): Promise<Leg> {
  const before = await ask<Cpu>(server.child, 'cpu');
  const clientBefore = process.cpuUsage();
  const instance = autocannon({
    url: server.url,
    connections: CONNECTIONS,
    duration: seconds,
    headers: { authorization: `Bearer ${key}` },
    // Self-signed development certificate of the bench's own server.
    tlsOptions: { rejectUnauthorized: false },
  } as autocannon.Options) as unknown as autocannon.Instance & Promise<autocannon.Result>;
  // Latency of 2xx answers only: a refused request is answered early and would flatter it.
  const okLatencies: number[] = [];
  const refused: Record<string, number> = {};
  instance.on('response', (_client, status, _bytes, ms) => {
    if (status >= 200 && status < 300) okLatencies.push(ms);
    else refused[status] = (refused[status] ?? 0) + 1;
  });
  const result = await instance;
  const client = process.cpuUsage(clientBefore);
  okLatencies.sort((a, b) => a - b);
  const pct = (p: number) =>
    okLatencies.length === 0
      ? Number.NaN
      : (okLatencies[
          Math.min(okLatencies.length - 1, Math.ceil((p / 100) * okLatencies.length) - 1)
        ] as number);
  const after = await ask<Cpu>(server.child, 'cpu');
  if (after.degraded) throw new Error('the limiter fell back to per-process counters during the bench');
  const cpuUs = after.cpu.user + after.cpu.system - before.cpu.user - before.cpu.system;
  if (result.errors > 0) refused.socket = result.errors;
  return {
    rps: okLatencies.length / Math.max(result.duration, 1e-9),
    requests: result.requests.total,
    p50: pct(50),
    p99: pct(99),
    errors: result.errors + result.non2xx,
    refused,
    cpuUs: cpuUs / Math.max(1, result.requests.total),
    clientCpuUs: (client.user + client.system) / Math.max(1, result.requests.total),
  };
}

const INTRO = [
  'Produced by `npm run bench -- ratelimit` (`ADS_TEST_REDIS_URL`, `ADS_REDIS_URL` or `--redis-url` adds',
  'the Redis rows; `--db` as in every harness). One server process per database and counter backend',
  '(bench/ratelimit/server.ts), autocannon in the bench process, the same route alternately with an',
  'enterprise key (no counters: "off") and a pro key (minute and day counters consumed on every',
  'request: "on"). The limiter clock runs 24,000 times as fast as real time, computed from the real',
  'clock on each reading (a minute every 2.5 ms, a day every 3.6 s), so a pro key is refused only',
  'above about 27,800 req/s. Until 2026-12-02 a timer added a minute every 50 ms instead; it fell',
  'behind under load, so some pro requests were refused (429) and counted as throughput: tables',
  'before that date count every answer in req/s and in their errors column. Since then req/s counts',
  '2xx answers only, latency is over 2xx answers, and any other answer is in the errors column by',
  'status. Each round gives one on/off ratio and one A/A ratio (a second enterprise leg: the noise',
  'floor); the order of the legs rotates so a drift in machine load cancels out.',
  'Server CPU per request comes from `process.cpuUsage()` in the server process around each leg,',
  'divided by every answer (a refused request costs CPU too).',
].join('\n');

/** The design notes below the generated tables survive `--write`. */
function keptNotes(): string {
  const file = new URL('../../docs/benchmarks.md', import.meta.url);
  const text = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
  const start = text.indexOf(NOTES_HEADING);
  if (start === -1) return '';
  const end = text.indexOf('\n## ', start);
  return text.slice(start, end === -1 ? undefined : end).trim();
}
const NOTES_HEADING = '### How the limiter stays cheap';

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
};
const spread = (xs: number[], digits: number) =>
  `${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)}`;

const rows: string[] = [];
const microRows: string[] = [];
const backends: ('memory' | 'redis')[] = redisUrl ? ['memory', 'redis'] : ['memory'];

/** Non-2xx answers and socket errors of some legs, with the count per status. */
function errorsCell(legs: Leg[]): string {
  const byStatus: Record<string, number> = {};
  for (const l of legs) for (const [k, n] of Object.entries(l.refused)) byStatus[k] = (byStatus[k] ?? 0) + n;
  const total = legs.reduce((n, l) => n + l.errors, 0);
  if (total === 0) return '0';
  return `${total} (${Object.entries(byStatus)
    .map(([k, n]) => `${n}×${k}`)
    .join(', ')})`;
}

/** Off, on and A/A legs on one database with one counter backend; returns the off legs' median CPU. */
async function measure(backend: 'memory' | 'redis', dialect: BenchDialect): Promise<number> {
  const target = dialect === 'postgres' ? await createTarget('postgres', pgUrl) : undefined;
  const server = await startServer(backend === 'redis' ? redisUrl : undefined, target?.databaseUrl);
  try {
    // Warm-up: JIT, TLS session code paths, the database's page cache, the limiter's counters.
    await leg(server, server.keys.enterprise);
    await leg(server, server.keys.pro);
    const off: Leg[] = [];
    const on: Leg[] = [];
    // A/A control: a second enterprise leg in every round. Its ratio to the first is the noise floor a
    // real on/off difference has to stand out from.
    const control: Leg[] = [];
    const kinds = [
      { legs: off, key: server.keys.enterprise },
      { legs: on, key: server.keys.pro },
      { legs: control, key: server.keys.enterprise },
    ];
    for (let r = 0; r < rounds; r++) {
      // The order rotates each round, so a drift in the machine's load does not favour one kind.
      for (let k = 0; k < kinds.length; k++) {
        const kind = kinds[(r + k) % kinds.length] as (typeof kinds)[number];
        kind.legs.push(await leg(server, kind.key));
      }
      const [a, b, c] = [off[r], on[r], control[r]] as [Leg, Leg, Leg];
      console.warn(
        `${dialect} ${backend} round ${r + 1}: off ${a.rps.toFixed(0)} req/s, server ${a.cpuUs.toFixed(0)} µs/req, client ${a.clientCpuUs.toFixed(0)} µs/req; ` +
          `on ${b.rps.toFixed(0)} req/s, server ${b.cpuUs.toFixed(0)} µs/req, client ${b.clientCpuUs.toFixed(0)} µs/req; ` +
          `ratio ${(b.rps / a.rps).toFixed(3)}, A/A ${(c.rps / a.rps).toFixed(3)}; errors off ${errorsCell([a])}, on ${errorsCell([b])}, A/A ${errorsCell([c])}`,
      );
    }
    // One more pro leg under the V8 sampling profiler: what share of the server's CPU is limiter code.
    await ask(server.child, 'profile-start');
    await leg(server, server.keys.pro);
    const { share } = await ask<{ share: number }>(server.child, 'profile-stop');
    const ratios = on.map((b, i) => b.rps / (off[i] as Leg).rps);
    const extraUs = on.map((b, i) => b.cpuUs - (off[i] as Leg).cpuUs);
    const cpuRatios = on.map((b, i) => b.cpuUs / (off[i] as Leg).cpuUs);
    const controlRatios = control.map((c, i) => c.rps / (off[i] as Leg).rps);
    const errors = errorsCell([...off, ...on, ...control]);
    if (errors !== '0') console.warn(`${dialect} ${backend}: errors ${errors} (not counted in req/s)`);
    const m = (legs: Leg[], f: (l: Leg) => number) => median(legs.map(f));
    const p99 = (legs: Leg[]) => m(legs, (l) => l.p99).toFixed(1);
    rows.push(
      `| ${dialect} | ${backend} | ${m(off, (l) => l.rps).toFixed(0)} | ${m(on, (l) => l.rps).toFixed(0)} | ` +
        `**${median(ratios).toFixed(2)}** (${spread(ratios, 2)}) | ` +
        `${median(controlRatios).toFixed(2)} (${spread(controlRatios, 2)}) | ` +
        `${m(off, (l) => l.cpuUs).toFixed(0)} | ${m(on, (l) => l.cpuUs).toFixed(0)} | ` +
        `${median(extraUs).toFixed(1)} (${spread(extraUs, 1)}) | ${median(cpuRatios).toFixed(2)} | ` +
        `${(100 * share).toFixed(1)}% | ${p99(off)} / ${p99(on)} | ${errors} |`,
    );
    return m(off, (l) => l.cpuUs);
  } finally {
    const exited = once(server.child, 'exit');
    server.child.send('close');
    const timer = setTimeout(() => server.child.kill(), 10_000);
    await exited;
    clearTimeout(timer);
    await target?.drop();
  }
}

for (const backend of backends) {
  const micro: MicroResult = await microBench({
    backend,
    redisUrl: backend === 'redis' ? redisUrl : undefined,
    calls: smoke ? 2_000 : backend === 'redis' ? 20_000 : 100_000,
    rounds: smoke ? 1 : 5,
  });
  const offCpuUs: number[] = [];
  for (const dialect of dbs) offCpuUs.push(await measure(backend, dialect));
  const extra = micro.onUs - micro.offUs;
  microRows.push(
    `| ${backend} | ${micro.offUs.toFixed(2)} | ${micro.onUs.toFixed(2)} | ${extra.toFixed(2)} | ` +
      `${((100 * extra) / (offCpuUs[0] as number)).toFixed(1)}% |`,
  );
}

const table = [
  `Measured ${new Date().toISOString().slice(0, 10)} on ${os.cpus().length} cores (${os.cpus()[0]?.model ?? 'unknown CPU'}), client and server processes sharing the machine; ${rounds} rounds of three ${seconds} s legs (off, on, off again as the A/A control; order rotating) after a warm-up, ${CONNECTIONS} connections, \`GET /v1/data\` (20 items) over HTTPS, ${dbs.map((d) => (d === 'sqlite' ? 'SQLite' : 'PostgreSQL')).join(' and ')}. req/s counts 2xx answers and p99 is over them; errors are the other answers of the off, on and A/A legs, by status. Medians over rounds, range in brackets; "off" is the enterprise key, "on" the pro key. The limiter share comes from one more pro leg under the V8 sampling profiler: the share of the server's busy samples with limiter code on the stack (src/ratelimit, the hook, ioredis and its parser); time a thread spends descheduled inside a socket write also counts, so on a loaded machine it overstates Redis.`,
  '',
  '| db | counters | off req/s | on req/s | on/off throughput | A/A control | off server CPU µs/req | on server CPU µs/req | extra CPU µs/req | on/off CPU | limiter share of on CPU | p99 ms off / on | errors |',
  '|---|---|---|---|---|---|---|---|---|---|---|---|---|',
  ...rows,
  '',
  `The limiter path alone, in the bench process without HTTP (bench/ratelimit/micro.ts): \`consume\` and the headers, ${CALLERS} concurrent callers, CPU µs per call, median of ${smoke ? 1 : 5} alternating rounds; the share is of the server CPU an unlimited request costs above (on ${dbs[0] === 'sqlite' ? 'SQLite' : 'PostgreSQL'}).`,
  '',
  '| counters | enterprise µs/call | pro µs/call | extra µs/call | share of a request |',
  '|---|---|---|---|---|',
  ...microRows,
].join('\n');
process.stdout.write(`${table}\n`);
if (write) writeBenchSection('Rate limiting', `${INTRO}\n\n${table}\n\n${keptNotes()}`);
