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
  requests: number;
  seconds: number;
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
