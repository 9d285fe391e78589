/**
 * Turns a scenario into autocannon requests. Each request picks its API key from the job's pool in
 * turn (so rate-limit counters spread over many keys), GETs and PATCHes a random seeded object,
 * DELETE walks its own list of objects once, and writes carry ~1 KB bodies from the fixed-seed corpus.
 */
import type autocannon from 'autocannon';
import { objectGenerator, rng } from '../seed/words.ts';
import type { RouteKind } from './baseline.ts';

/** What one driver process needs to load a server (or the baseline) with one scenario. */
export interface LoadJob {
  url: string;
  caFile: string;
  label: string;
  cycle: readonly RouteKind[];
  seconds: number;
  warmupSeconds: number;
  connections: number;
  keys: string[];
  /** Files of newline-separated object ids: random reads and patches, and the ones DELETE may remove. */
  readIdsFile: string;
  deleteIdsFile: string;
  /**
   * A DELETE-only leg against the server ends when its id list is used up: every DELETE there
   * removes an object, so going on would measure 404s. Baselines remove nothing and run their time.
   */
  endsWithDeleteList?: boolean;
  seed: number;
  /** The paths `search` requests take in turn (`/v1/search?q=…`), one sequence shared by all connections. */
  searchPaths?: string[];
}

const BODY_VARIANTS = 256;
const CONTENT_CHARS = 1024;

/** The request cycle for `job`; `ids` are the contents of its id files. */
export function buildRequests(job: LoadJob, ids: { read: string[]; delete: string[] }): autocannon.Request[] {
  const rand = rng(job.seed);
  const next = objectGenerator(job.seed, CONTENT_CHARS, CONTENT_CHARS);
  const creates: string[] = [];
  const patches: string[] = [];
  for (let i = 0; i < BODY_VARIANTS; i++) {
    const o = next();
    creates.push(JSON.stringify(o));
    patches.push(JSON.stringify({ title: o.title, content: o.content }));
  }
  let keyTurn = 0;
  let bodyTurn = 0;
  let deleteTurn = 0;
  let searchTurn = 0;
  const searchPaths = job.searchPaths ?? [];
  const auth = () => `Bearer ${job.keys[keyTurn++ % job.keys.length]}`;
  const randomId = () => ids.read[Math.floor(rand() * ids.read.length)];
  // The driver ends a DELETE leg when its list is used up; should a cycle mixing DELETE with other
  // requests run past it, DELETE repeats the last id and the 404s show up as errors.
  const deleteId = () => ids.delete[Math.min(deleteTurn++, ids.delete.length - 1)];
  const json = { 'content-type': 'application/json' };

  const make: Record<RouteKind, () => autocannon.Request> = {
    'get-item': () => ({
      method: 'GET',
      setupRequest: (req) => ({ ...req, path: `/v1/data/${randomId()}`, headers: { authorization: auth() } }),
    }),
    'list-date': () => ({
      method: 'GET',
      path: '/v1/data?limit=20&sort=date',
      setupRequest: (req) => ({ ...req, headers: { authorization: auth() } }),
    }),
    'list-title': () => ({
      method: 'GET',
      path: '/v1/data?limit=20&sort=title',
      setupRequest: (req) => ({ ...req, headers: { authorization: auth() } }),
    }),
    create: () => ({
      method: 'POST',
      path: '/v1/data',
      setupRequest: (req) => ({
        ...req,
        headers: { ...json, authorization: auth() },
        body: creates[bodyTurn++ % creates.length],
      }),
    }),
    patch: () => ({
      method: 'PATCH',
      setupRequest: (req) => ({
        ...req,
        path: `/v1/data/${randomId()}`,
        headers: { ...json, authorization: auth() },
        body: patches[bodyTurn++ % patches.length],
      }),
    }),
    delete: () => ({
      method: 'DELETE',
      setupRequest: (req) => ({ ...req, path: `/v1/data/${deleteId()}`, headers: { authorization: auth() } }),
    }),
    search: () => ({
      method: 'GET',
      setupRequest: (req) => ({
        ...req,
        path: searchPaths[searchTurn++ % searchPaths.length],
        headers: { authorization: auth() },
      }),
    }),
  };
  return job.cycle.map((kind) => make[kind]());
}
