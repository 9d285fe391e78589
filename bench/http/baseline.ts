/**
 * What the baseline server answers, per kind of request: the status and body size the real server
 * gave to the same request, measured at the start of the run.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/** The request kinds the scenarios send. */
export type RouteKind = 'get-item' | 'list-date' | 'list-title' | 'create' | 'patch' | 'delete' | 'search';

export interface BaselineSpec {
  certFile: string;
  keyFile: string;
  /**
   * `node` (the baseline): a bare `node:https` handler. `fastify`: the framework floor, Fastify 5
   * with one route answering the same bodies with the real server's response headers, no logging,
   * no hooks: what the framework the service is built on costs before any of the service's work.
   */
  framework?: 'node' | 'fastify';
  routes: Partial<Record<RouteKind, BaselineRoute>>;
}

/** What the real server answered to one kind of request. */
export interface BaselineRoute {
  status: number;
  bytes: number;
  /** Its response headers but the per-connection ones (date, connection, keep-alive, length). */
  headers?: Record<string, string>;
}

/** Classifies a request the way the scenarios shape them. */
export function routeKind(method: string, url: string): RouteKind | 'other' {
  const isList = url === '/v1/data' || url.startsWith('/v1/data?');
  if (method === 'GET') {
    if (url.startsWith('/v1/search?')) return 'search';
    if (isList) return url.includes('sort=title') ? 'list-title' : 'list-date';
    return url.startsWith('/v1/data/') ? 'get-item' : 'other';
  }
  if (method === 'POST' && isList) return 'create';
  if (method === 'PATCH') return 'patch';
  if (method === 'DELETE') return 'delete';
  return 'other';
}

/** A valid JSON document of exactly `bytes` bytes (at least 12). */
export function baselineBody(bytes: number): Buffer {
  const frame = '{"data":""}';
  return Buffer.from(`{"data":"${'x'.repeat(Math.max(0, bytes - frame.length))}"}`);
}

const PROGRAM = path.resolve(import.meta.dirname, 'baseline-server.ts');

/** A running baseline process. */
export interface BaselineProcess {
  child: ChildProcess;
  pid: number;
  url: string;
  stop(): Promise<void>;
}

/** Starts the baseline (or the framework floor) in its own process with `spec` written to `specFile`. */
export async function launchBaseline(spec: BaselineSpec, specFile: string): Promise<BaselineProcess> {
  fs.writeFileSync(specFile, JSON.stringify(spec));
  const child = spawn(process.execPath, ['--import', 'tsx', PROGRAM, specFile], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d) => {
      out += d;
      const m = /"port":(\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    exited.then(() => reject(new Error('baseline server exited before listening')));
  });
  return {
    child,
    pid: child.pid!,
    url: `https://127.0.0.1:${port}`,
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}
