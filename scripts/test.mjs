#!/usr/bin/env node
// `npm test [-- paths…]`: every test file through node:test + tsx. PostgreSQL and Redis suites run
// when ADS_TEST_POSTGRES_URL / ADS_TEST_REDIS_URL are set (always in CI, where .ci/run sets them).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const args = process.argv.slice(2);
const roots = args.length ? args : ['test'];
const files = [];
for (const root of roots) {
  if (fs.statSync(root).isFile()) files.push(root);
  else {
    for (const f of fs.readdirSync(root, { recursive: true })) {
      if (String(f).endsWith('.test.ts')) files.push(path.join(root, String(f)));
    }
  }
}
files.sort();

const optional = [
  ['ADS_TEST_POSTGRES_URL', 'PostgreSQL', 'postgres://postgres@127.0.0.1:5432/postgres'],
  ['ADS_TEST_REDIS_URL', 'Redis', 'redis://127.0.0.1:6379'],
];
const skipped = optional.filter(([name]) => !process.env[name]);
if (process.env.CI === 'true' && skipped.length) {
  console.error(`CI=true but ${skipped.map(([n]) => n).join(', ')} not set: those suites must run in CI.`);
  process.exit(1);
}

// The suites that spawn `ads` run bin/ads.js, which starts from the start-up bundle `npm install`
// builds, or through tsx (one to two seconds more per spawn) once a source is newer than it. Built
// again here, they run the code as edited and as `ads` runs it after an install.
spawnSync(process.execPath, [path.resolve(import.meta.dirname, '../bin/bundle.mjs')], { stdio: 'inherit' });

const result = spawnSync(
  process.execPath,
  ['--import', 'tsx', '--test', '--test-reporter=spec', '--test-concurrency=2', ...files],
  { stdio: 'inherit', env: { ...process.env, NODE_ENV: 'test' } },
);

for (const [name, what, example] of skipped) {
  console.warn(`\n${what} suites were SKIPPED: set ${name}=${example} to run them.`);
}
process.exit(result.status ?? 1);
