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

const options = {
  url: job.url,
  connections: job.connections,
  pipelining: 1,
  duration: job.seconds,
  timeout: 10,
  requests: buildRequests(job, ids),
  tlsOptions: { ca: fs.readFileSync(job.caFile), servername: 'localhost' },
  ...(job.warmupSeconds > 0 ? { warmup: { connections: job.connections, duration: job.warmupSeconds } } : {}),
} as autocannon.Options;

const instance = autocannon(options) as unknown as autocannon.Instance & Promise<autocannon.Result>;
instance.on('response', (_client, status, _bytes, ms) => {
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
const out: LoadResult = {
  requests,
  seconds: result.duration,
  rps: requests / Math.max(result.duration, 1e-9),
  p50: pct(50),
  p95: pct(95),
  p99: pct(99),
  non2xx: result.non2xx,
  socketErrors: result.errors,
  statusCounts,
};
process.stdout.write(`${JSON.stringify(out)}\n`);
