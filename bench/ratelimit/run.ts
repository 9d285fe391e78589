/**
 * What rate limiting costs a request: one server process (bench/ratelimit/server.ts), one route
 * (`GET /v1/data`), driven by autocannon over HTTPS on loopback from this process, alternately with an
 * enterprise key (no counters) and a pro key (minute and day counters consumed on every request).
 * Counters in memory and, with ADS_REDIS_URL, in Redis (a separate server process for each).
 *
 * Noise control for a shared machine: the keys alternate on the same warm server, in rotating order
 * over several rounds, and each round gives its own ratio; the table shows the median and the range.
 * Every round also repeats the enterprise leg (A/A control): the spread of that ratio is the noise floor.
 * Besides throughput, the server process's CPU time per request is read before and after every leg
 * (process.cpuUsage() in the server): it is far less sensitive to other load than req/s.
 *
 *   node --import tsx bench/ratelimit/run.ts [--seconds 2] [--rounds 6] [--write] [--smoke]
 *
 * `--smoke`: 1 s legs, one round, a short micro-benchmark and nothing written: checks the harness
 * (CI), not the figures.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { writeBenchSection } from '../report.ts';
import { CALLERS, type MicroResult, microBench } from './micro.ts';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string' },
    rounds: { type: 'string' },
    write: { type: 'boolean', default: false },
    smoke: { type: 'boolean', default: false },
  },
});
const smoke = values.smoke === true;
const seconds = Number(values.seconds ?? (smoke ? 1 : 2));
const rounds = Number(values.rounds ?? (smoke ? 1 : 6));
const CONNECTIONS = 10;

type Ready = { url: string; keys: { enterprise: string; pro: string } };
type Cpu = { cpu: NodeJS.CpuUsage; degraded: boolean };
type Leg = {
  rps: number;
  requests: number;
  p50: number;
  p99: number;
  errors: number;
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

async function startServer(redisUrl?: string) {
  const child = fork(new URL('./server.ts', import.meta.url), {
    execArgv: ['--import', 'tsx'],
    env: { ...process.env, BENCH_REDIS_URL: redisUrl ?? '' },
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
  const result = await autocannon({
    url: server.url,
    connections: CONNECTIONS,
    duration: seconds,
    headers: { authorization: `Bearer ${key}` },
    // Self-signed development certificate of the bench's own server.
    tlsOptions: { rejectUnauthorized: false },
  } as autocannon.Options);
  const client = process.cpuUsage(clientBefore);
  const after = await ask<Cpu>(server.child, 'cpu');
  if (after.degraded) throw new Error('the limiter fell back to per-process counters during the bench');
  const cpuUs = after.cpu.user + after.cpu.system - before.cpu.user - before.cpu.system;
  return {
    rps: result.requests.average,
    requests: result.requests.total,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.non2xx,
    cpuUs: cpuUs / Math.max(1, result.requests.total),
    clientCpuUs: (client.user + client.system) / Math.max(1, result.requests.total),
  };
}

const INTRO = [
  'Produced by `npm run bench -- ratelimit --write` (`ADS_REDIS_URL` adds the Redis rows). One server',
  'process per counter backend (bench/ratelimit/server.ts), autocannon in the bench process, the same',
  'route alternately with an enterprise key (no counters: "off") and a pro key (minute and day counters',
  'consumed on every request: "on"); the limiter clock advances a minute every 50 ms so nothing is',
  'refused. Each round gives one on/off ratio and one A/A ratio (a second enterprise leg: the noise',
  'floor); the order of the legs rotates so a drift in machine load cancels out.',
  'Server CPU per request comes from `process.cpuUsage()` in the server process around each leg.',
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
const backends: ('memory' | 'redis')[] = process.env.ADS_REDIS_URL ? ['memory', 'redis'] : ['memory'];
for (const backend of backends) {
  const micro: MicroResult = await microBench({
    backend,
    redisUrl: backend === 'redis' ? process.env.ADS_REDIS_URL : undefined,
    calls: smoke ? 2_000 : backend === 'redis' ? 20_000 : 100_000,
    rounds: smoke ? 1 : 5,
  });
  const server = await startServer(backend === 'redis' ? process.env.ADS_REDIS_URL : undefined);
  try {
    // Warm-up: JIT, TLS session code paths, SQLite page cache, the limiter's counters.
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
        `${backend} round ${r + 1}: off ${a.rps.toFixed(0)} req/s, server ${a.cpuUs.toFixed(0)} µs/req, client ${a.clientCpuUs.toFixed(0)} µs/req; ` +
          `on ${b.rps.toFixed(0)} req/s, server ${b.cpuUs.toFixed(0)} µs/req, client ${b.clientCpuUs.toFixed(0)} µs/req; ` +
          `ratio ${(b.rps / a.rps).toFixed(3)}, A/A ${(c.rps / a.rps).toFixed(3)}`,
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
    const errors = [...off, ...on, ...control].reduce((n, l) => n + l.errors, 0);
    const m = (legs: Leg[], f: (l: Leg) => number) => median(legs.map(f));
    rows.push(
      `| ${backend} | ${m(off, (l) => l.rps).toFixed(0)} | ${m(on, (l) => l.rps).toFixed(0)} | ` +
        `**${median(ratios).toFixed(2)}** (${spread(ratios, 2)}) | ` +
        `${median(controlRatios).toFixed(2)} (${spread(controlRatios, 2)}) | ` +
        `${m(off, (l) => l.cpuUs).toFixed(0)} | ${m(on, (l) => l.cpuUs).toFixed(0)} | ` +
        `${median(extraUs).toFixed(1)} (${spread(extraUs, 1)}) | ${median(cpuRatios).toFixed(2)} | ` +
        `${(100 * share).toFixed(1)}% | ${m(off, (l) => l.p99)} / ${m(on, (l) => l.p99)} | ${errors} |`,
    );
    const extra = micro.onUs - micro.offUs;
    microRows.push(
      `| ${backend} | ${micro.offUs.toFixed(2)} | ${micro.onUs.toFixed(2)} | ${extra.toFixed(2)} | ` +
        `${((100 * extra) / m(off, (l) => l.cpuUs)).toFixed(1)}% |`,
    );
  } finally {
    const exited = once(server.child, 'exit');
    server.child.send('close');
    const timer = setTimeout(() => server.child.kill(), 10_000);
    await exited;
    clearTimeout(timer);
  }
}

const table = [
  `Measured ${new Date().toISOString().slice(0, 10)} on ${os.cpus().length} cores (${os.cpus()[0]?.model ?? 'unknown CPU'}), client and server processes sharing the machine; ${rounds} rounds of three ${seconds} s legs (off, on, off again as the A/A control; order rotating) after a warm-up, ${CONNECTIONS} connections, \`GET /v1/data\` (20 items) over HTTPS, SQLite. Medians over rounds, range in brackets; "off" is the enterprise key, "on" the pro key. The limiter share comes from one more pro leg under the V8 sampling profiler: the share of the server's busy samples with limiter code on the stack (src/ratelimit, the hook, ioredis and its parser); time a thread spends descheduled inside a socket write also counts, so on a loaded machine it overstates Redis.`,
  '',
  '| counters | off req/s | on req/s | on/off throughput | A/A control | off server CPU µs/req | on server CPU µs/req | extra CPU µs/req | on/off CPU | limiter share of on CPU | p99 ms off / on | errors |',
  '|---|---|---|---|---|---|---|---|---|---|---|---|',
  ...rows,
  '',
  `The limiter path alone, in the bench process without HTTP (bench/ratelimit/micro.ts): \`consume\` and the headers, ${CALLERS} concurrent callers, CPU µs per call, median of 5 alternating rounds; the share is of the server CPU an unlimited request costs above.`,
  '',
  '| counters | enterprise µs/call | pro µs/call | extra µs/call | share of a request |',
  '|---|---|---|---|---|',
  ...microRows,
].join('\n');
process.stdout.write(`${table}\n`);
if (values.write && !smoke) writeBenchSection('Rate limiting', `${INTRO}\n\n${table}\n\n${keptNotes()}`);
