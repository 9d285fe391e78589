/**
 * The real server under test: `node bin/ads.js serve` as its own process, logs (JSON lines, the
 * default `info` level, one line per request) going to a file as an operator would keep them.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const BIN = path.resolve(import.meta.dirname, '../../bin/ads.js');
const BUNDLE = path.resolve(import.meta.dirname, '../../bin/bundle.mjs');
const READY_TIMEOUT_MS = 60_000;
const POLL_MS = 5;

export interface ServerProcess {
  child: ChildProcess;
  pid: number;
  /** `https://127.0.0.1:<port>` */
  url: string;
  /** Milliseconds from spawn to the `listening` log line (its own timestamp), or to `Serving …` on stdout. */
  startupMs: number;
  logFile: string;
  stop(): Promise<number | null>;
}

export interface LaunchOptions {
  dataDir: string;
  databaseUrl: string;
  env?: Record<string, string>;
  /** Extra node flags, e.g. `--cpu-prof`. */
  nodeArgs?: string[];
  logFile: string;
  /** The `ads` entry point to run; defaults to this checkout's bin/ads.js. */
  bin?: string;
}

/**
 * `ads serve` starts from the bundle `npm install` builds when it is fresh (bin/ads.js): build it
 * now, as an install would, so sources edited since the install do not fall back to tsx (and a
 * start-up figure does not time tsx). It reports on stderr whether it built one.
 */
export function buildBundle(): void {
  spawnSync(process.execPath, [BUNDLE], { stdio: ['ignore', 'inherit', 'inherit'] });
}

/** Spawns `ads serve` on a free port and resolves once it logs that it listens. */
export async function launchServer(opts: LaunchOptions): Promise<ServerProcess> {
  const outFile = `${opts.logFile}.stdout`;
  fs.writeFileSync(opts.logFile, '');
  fs.writeFileSync(outFile, '');
  const log = fs.openSync(opts.logFile, 'a');
  const out = fs.openSync(outFile, 'a');
  const spawnedAt = Date.now();
  const child = spawn(process.execPath, [...(opts.nodeArgs ?? []), opts.bin ?? BIN, 'serve'], {
    env: {
      ...process.env,
      ADS_DATA_DIR: opts.dataDir,
      ADS_DATABASE_URL: opts.databaseUrl,
      ADS_PORT: '0',
      ADS_HOST: '127.0.0.1',
      ...opts.env,
    },
    stdio: ['ignore', out, log],
  });
  fs.closeSync(log);
  fs.closeSync(out);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let exitCode: number | null | undefined;
  exited.then((code) => {
    exitCode = code;
  });
  const deadline = Date.now() + READY_TIMEOUT_MS;
  let ready: { url: string; time: string } | undefined;
  // Polling the file keeps this process off the server's log path while the load runs.
  while (!ready) {
    const text = fs.readFileSync(opts.logFile, 'utf8');
    ready = listeningLine(text) ?? servingLine(fs.readFileSync(outFile, 'utf8'));
    if (ready) break;
    if (exitCode !== undefined) throw new Error(`ads serve exited with ${exitCode}:\n${text.slice(-2000)}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`ads serve did not start within ${READY_TIMEOUT_MS} ms:\n${text.slice(-2000)}`);
    }
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
  const loggedAt = Date.parse(ready.time);
  return {
    child,
    pid: child.pid!,
    url: ready.url.replace(/\/v1$/, ''),
    startupMs: Number.isFinite(loggedAt) ? loggedAt - spawnedAt : Date.now() - spawnedAt,
    logFile: opts.logFile,
    stop: async () => {
      if (exitCode === undefined) child.kill('SIGTERM');
      return exited;
    },
  };
}

/** Below the `info` log level there is no listening line; `ads serve` also prints `Serving <url>/v1`. */
function servingLine(text: string): { url: string; time: string } | undefined {
  const m = /^Serving (https?:\/\/\S+)$/m.exec(text);
  return m?.[1] ? { url: m[1], time: new Date().toISOString() } : undefined;
}

function listeningLine(text: string): { url: string; time: string } | undefined {
  for (const line of text.split('\n')) {
    if (!line.includes('"msg":"listening"')) continue;
    try {
      const entry = JSON.parse(line) as { url?: string; time?: string };
      if (entry.url) return { url: entry.url, time: entry.time ?? '' };
    } catch {
      // A partly written line: read again on the next poll.
    }
  }
  return undefined;
}
