import { createRequire } from 'node:module';

// Packages that only some configurations use, loaded the first time they are needed rather than
// when the process starts: `ads serve` on SQLite never evaluates the PostgreSQL driver or the Redis
// client, which took 60-70 ms of its start-up (docs/benchmarks.md, "Notes: start-up"). Loaded
// through Node's own require, so the start-up bundle (bin/bundle.mjs) leaves them out and they are
// resolved from node_modules as usual.
const load = createRequire(import.meta.url);

function onFirstUse<T>(name: string): () => T {
  let loaded: T | undefined;
  return () => {
    loaded ??= load(name) as T;
    return loaded;
  };
}

/** The PostgreSQL driver (`pg`). */
export const pgDriver = onFirstUse<typeof import('pg')>('pg');

/** The Redis client (`ioredis`). */
export const ioredis = onFirstUse<typeof import('ioredis')>('ioredis');
