/**
 * Runs one LoadJob in a fresh driver process (bench/http/driver.ts) while watching the peak RSS of
 * the process under load.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { LoadJob } from './requests.ts';
import { watchPeakRss } from './rss.ts';

/** Figures of one measured run (the warm-up excluded). */
export interface LoadResult {
  /** Answers of every status. */
  requests: number;
  /** 2xx answers. */
  ok: number;
  seconds: number;
  /** 2xx answers per second: errors (non-2xx, socket errors) are not throughput. */
  rps: number;
  /** Latency percentiles of 2xx responses, milliseconds. */
  p50: number;
  p95: number;
  p99: number;
  non2xx: number;
  socketErrors: number;
  statusCounts: Record<string, number>;
}

const DRIVER = path.resolve(import.meta.dirname, 'driver.ts');

/** Drives `job` against its URL; `peakRss` is the loaded process's peak in bytes during the run. */
export async function runLoad(
  job: LoadJob,
  jobFile: string,
  loadedPid: number,
): Promise<LoadResult & { peakRss: number | undefined }> {
  fs.writeFileSync(jobFile, JSON.stringify(job));
  const rss = watchPeakRss(loadedPid);
  const child = spawn(process.execPath, ['--import', 'tsx', DRIVER, jobFile], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (d) => {
    out += d;
  });
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  const peakRss = rss.stop();
  if (code !== 0) throw new Error(`load driver exited with ${code} (${job.label})`);
  const result = JSON.parse(out.trim().split('\n').pop() ?? '{}') as LoadResult;
  return { ...result, peakRss };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Legs of one row: medians of rate and latency, errors and requests summed, the highest peak RSS. */
export function medianLoad<T extends LoadResult & { peakRss?: number | undefined }>(legs: T[]): T {
  if (legs.length === 1) return legs[0]!;
  const statusCounts: Record<string, number> = {};
  for (const l of legs)
    for (const [k, v] of Object.entries(l.statusCounts)) statusCounts[k] = (statusCounts[k] ?? 0) + v;
  const rss = legs.map((l) => l.peakRss).filter((x): x is number => x !== undefined);
  return {
    ...legs[0]!,
    requests: legs.reduce((a, l) => a + l.requests, 0),
    ok: legs.reduce((a, l) => a + l.ok, 0),
    seconds: legs.reduce((a, l) => a + l.seconds, 0),
    rps: median(legs.map((l) => l.rps)),
    p50: median(legs.map((l) => l.p50)),
    p95: median(legs.map((l) => l.p95)),
    p99: median(legs.map((l) => l.p99)),
    non2xx: legs.reduce((a, l) => a + l.non2xx, 0),
    socketErrors: legs.reduce((a, l) => a + l.socketErrors, 0),
    statusCounts,
    peakRss: rss.length > 0 ? Math.max(...rss) : undefined,
  };
}
