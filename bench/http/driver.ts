/**
 * The load generator, run as its own process so the client never shares an event loop with the
 * harness: reads a LoadJob (JSON file), drives autocannon over HTTPS, prints one JSON LoadResult.
 *
 *   node --import tsx bench/http/driver.ts <job.json>
 */
import fs from 'node:fs';
import autocannon from 'autocannon';
import type { LoadResult } from './load.ts';
import { buildRequests, type LoadJob } from './requests.ts';

const job = JSON.parse(fs.readFileSync(process.argv[2]!, 'utf8')) as LoadJob;
const readLines = (file: string) =>
  fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
const ids = { read: readLines(job.readIdsFile), delete: readLines(job.deleteIdsFile) };

// Growable buffer of 2xx latencies; percentiles by sorting once at the end.
let latencies = new Float64Array(1 << 16);
let count = 0;
const record = (ms: number) => {
  if (count === latencies.length) {
    const bigger = new Float64Array(latencies.length * 2);
    bigger.set(latencies);
    latencies = bigger;
  }
  latencies[count++] = ms;
};

// A DELETE leg against the server removes each listed object once, so it ends when its list is used
// up (the warm-up taking its share of the list first) instead of running on into 404s for objects
// already gone. autocannon stops such a leg only at its next one-second sample, so its time is
// taken up to the last response. 0: no cap.
const deleteOnly = job.endsWithDeleteList === true && job.cycle.every((kind) => kind === 'delete');
const warmupCap =
  deleteOnly && job.warmupSeconds > 0
    ? Math.floor((ids.delete.length * job.warmupSeconds) / (job.warmupSeconds + job.seconds))
    : 0;
const cap = deleteOnly ? ids.delete.length - warmupCap : 0;
// autocannon spreads a cap over the connections; one whose share is 0 would run without a limit.
if (deleteOnly && (cap < job.connections || (job.warmupSeconds > 0 && warmupCap < job.connections))) {
  throw new Error(
    `${job.label}: ${ids.delete.length} objects to delete are too few for ${job.connections} connections`,
  );
}

const options = {
  url: job.url,
  connections: job.connections,
  pipelining: 1,
  duration: job.seconds,
  timeout: 10,
  requests: buildRequests(job, ids),
  tlsOptions: { ca: fs.readFileSync(job.caFile), servername: 'localhost' },
  ...(cap > 0 ? { maxOverallRequests: cap } : {}),
  ...(job.warmupSeconds > 0
    ? {
        warmup: {
          connections: job.connections,
          duration: job.warmupSeconds,
          ...(warmupCap > 0 ? { maxOverallRequests: warmupCap } : {}),
        },
      }
    : {}),
} as autocannon.Options;

const instance = autocannon(options) as unknown as autocannon.Instance & Promise<autocannon.Result>;
let lastResponseAt = 0;
instance.on('response', (_client, status, _bytes, ms) => {
  lastResponseAt = Date.now();
  if (status >= 200 && status < 300) record(ms);
});
const result = await instance;

const sorted = latencies.subarray(0, count).sort();
const pct = (p: number) => (count === 0 ? 0 : sorted[Math.min(count - 1, Math.ceil((p / 100) * count) - 1)]!);
const statusCounts: Record<string, number> = {};
for (const [code, v] of Object.entries(result.statusCodeStats ?? {})) {
  statusCounts[code] = (v as { count: number }).count;
}
const requests = Object.values(statusCounts).reduce((a, b) => a + b, 0);
// Throughput is successful answers only: a 429, 401, 404 or 500 is an error (counted in non2xx and
// statusCounts), not work done.
const ok = Object.entries(statusCounts)
  .filter(([code]) => code.startsWith('2'))
  .reduce((a, [, n]) => a + n, 0);
const seconds =
  cap > 0 && requests >= cap ? (lastResponseAt - new Date(result.start).getTime()) / 1000 : result.duration;
const out: LoadResult = {
  requests,
  ok,
  seconds,
  rps: ok / Math.max(seconds, 1e-9),
  p50: pct(50),
  p95: pct(95),
  p99: pct(99),
  non2xx: result.non2xx,
  socketErrors: result.errors,
  statusCounts,
};
process.stdout.write(`${JSON.stringify(out)}\n`);
