/**
 * Peak resident memory of another process. On Linux the kernel keeps the high-water mark (VmHWM)
 * and lets the owner reset it (`5` into /proc/<pid>/clear_refs), so each scenario gets its own
 * exact peak; elsewhere, or when the reset is refused, a sampler polls the current RSS.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';

const SAMPLE_MS = 100;

function statusField(pid: number, field: 'VmHWM' | 'VmRSS'): number | undefined {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status);
    return m ? Number(m[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

function currentRss(pid: number): number | undefined {
  const fromProc = statusField(pid, 'VmRSS');
  if (fromProc !== undefined) return fromProc;
  try {
    const kb = Number(execFileSync('ps', ['-o', 'rss=', '-p', String(pid)], { encoding: 'utf8' }).trim());
    return Number.isFinite(kb) && kb > 0 ? kb * 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** Starts watching `pid`; `stop()` returns the peak RSS in bytes since the call (undefined if unknown). */
export function watchPeakRss(pid: number): { stop(): number | undefined } {
  let kernelPeak = false;
  try {
    fs.writeFileSync(`/proc/${pid}/clear_refs`, '5');
    kernelPeak = statusField(pid, 'VmHWM') !== undefined;
  } catch {
    kernelPeak = false;
  }
  let sampled = currentRss(pid);
  const timer = kernelPeak
    ? undefined
    : setInterval(() => {
        const now = currentRss(pid);
        if (now !== undefined) sampled = Math.max(sampled ?? 0, now);
      }, SAMPLE_MS);
  timer?.unref();
  return {
    stop() {
      clearInterval(timer);
      const last = currentRss(pid);
      if (last !== undefined) sampled = Math.max(sampled ?? 0, last);
      const hwm = kernelPeak ? statusField(pid, 'VmHWM') : undefined;
      return hwm ?? sampled;
    },
  };
}
