import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Agent, request } from 'undici';

const BIN = path.resolve(import.meta.dirname, '../../bin/ads.js');

/** Runs `ads <args>` to completion with the given ADS_* settings. */
export function runAds(args: string[], env: Record<string, string>) {
  const res = spawnSync(process.execPath, [BIN, ...args], {
    env: { ...process.env, ADS_LOG_LEVEL: 'warn', ...env },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { code: res.status, stdout: res.stdout, stderr: res.stderr };
}

export interface ServeProcess {
  child: ChildProcess;
  url: string;
  stdout: () => string;
  stderr: () => string;
  /** An HTTPS client trusting this server's certificate. */
  fetch(
    method: string,
    pathAndQuery: string,
    opts?: { key?: string; body?: unknown },
    // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON bodies.
  ): Promise<{ status: number; body: any; headers: Record<string, unknown> }>;
  exited: Promise<number | null>;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * Starts `ads serve` on a free port and resolves once it logs that it is listening. `entry`: the
 * script to run instead of bin/ads.js (the start-up bundle itself, say). With `command: 'worker'`
 * it starts `ads worker` instead and resolves once its workers started (`url` is then empty).
 */
export async function startServe(
  env: Record<string, string>,
  {
    timeoutMs = 60_000,
    entry = BIN,
    command = 'serve',
  }: { timeoutMs?: number; entry?: string; command?: 'serve' | 'worker' } = {},
): Promise<ServeProcess> {
  const child = spawn(process.execPath, [entry, command], {
    env: { ...process.env, ADS_PORT: '0', ADS_LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout?.on('data', (d) => {
    out += d;
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  // Ready when stdout says where it serves (printed after listen, after any first-start key).
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      // Never leave a server behind: a stray one keeps a CPU busy for the rest of the run.
      child.kill('SIGKILL');
      reject(new Error(`serve did not start in ${timeoutMs} ms:\n${err}`));
    }, timeoutMs);
    child.stderr?.on('data', (d) => {
      err += d;
      // `ads worker` serves nothing: ready when it logs that its workers started.
      if (command === 'worker' && /"msg":"worker started"/.test(err)) {
        clearTimeout(timer);
        resolve('');
      }
    });
    child.stdout?.on('data', () => {
      const m = /^Serving (https?:\/\/\S+)\/v1$/m.exec(out);
      if (m?.[1]) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`serve exited with ${code}:\n${err}`));
    });
  });
  const dataDir = env.ADS_DATA_DIR;
  const ca =
    dataDir && fs.existsSync(path.join(dataDir, 'tls/cert.pem'))
      ? fs.readFileSync(path.join(dataDir, 'tls/cert.pem'))
      : undefined;
  const dispatcher = new Agent({ connect: { ca, servername: 'localhost' } });
  return {
    child,
    url,
    stdout: () => out,
    stderr: () => err,
    exited,
    fetch: async (method, pathAndQuery, opts = {}) => {
      const headers: Record<string, string> = {};
      if (opts.key) headers.authorization = `Bearer ${opts.key}`;
      if (opts.body !== undefined) headers['content-type'] = 'application/json';
      const res = await request(`${url}${pathAndQuery}`, {
        method: method as 'GET',
        headers,
        body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
        dispatcher,
      });
      const text = await res.body.text();
      return { status: res.statusCode, body: text ? JSON.parse(text) : null, headers: res.headers };
    },
    stop: async (signal = 'SIGTERM') => {
      if (child.exitCode === null) child.kill(signal);
      const code = await exited;
      await dispatcher.close();
      return code;
    },
  };
}
