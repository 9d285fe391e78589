#!/usr/bin/env node
// `npm test [-- paths…]`: every test file through node:test + tsx. PostgreSQL and Redis suites run
// when ADS_TEST_POSTGRES_URL / ADS_TEST_REDIS_URL are set (always in CI, where .ci/run sets them).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

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

// Each file node:test runs is a process of its own, and importing the app through tsx's module hooks
// (off the main thread on Node 20) costs it about 2 s of CPU: as much as many suites take. So the
// files run in groups, one process per group: the files of a directory, at most GROUP_SIZE to a
// group, so the two lanes stay balanced. A suite leaves nothing behind for the next one (each
// harness builds its own app on its own database), and a failure still names its file and line.
const GROUP_SIZE = 7;
const byDir = new Map();
for (const f of files) byDir.set(path.dirname(f), [...(byDir.get(path.dirname(f)) ?? []), f]);
// This run's own directory: another `npm test` in the same checkout keeps its groups.
const groupsRoot = path.resolve(import.meta.dirname, '../node_modules/.cache/ads-test-groups');
fs.mkdirSync(groupsRoot, { recursive: true });
const groupDir = fs.mkdtempSync(path.join(groupsRoot, 'run-'));
const entries = [];
for (const [dir, inDir] of byDir) {
  const chunks = Math.ceil(inDir.length / GROUP_SIZE);
  for (let c = 0; c < chunks; c++) {
    const chunk = inDir.filter((_, i) => i % chunks === c);
    if (chunk.length === 1) {
      entries.push({ file: chunk[0], size: 1 });
      continue;
    }
    const name = `${path.relative('.', dir).replaceAll(path.sep, '-') || 'root'}-${c + 1}.test.mjs`;
    const file = path.join(groupDir, name);
    const imports = chunk.map((f) => `import ${JSON.stringify(pathToFileURL(path.resolve(f)).href)};`);
    fs.writeFileSync(file, `// ${chunk.join(', ')}\n${imports.join('\n')}\n`);
    entries.push({ file, size: chunk.length });
  }
}
// Largest groups first, so no long one starts last.
entries.sort((a, b) => b.size - a.size);

const result = spawnSync(
  process.execPath,
  [
    '--import',
    'tsx',
    '--test',
    '--test-reporter=spec',
    '--test-concurrency=2',
    ...entries.map((e) => e.file),
  ],
  { stdio: 'inherit', env: { ...process.env, NODE_ENV: 'test' } },
);

fs.rmSync(groupDir, { recursive: true, force: true });

for (const [name, what, example] of skipped) {
  console.warn(`\n${what} suites were SKIPPED: set ${name}=${example} to run them.`);
}
process.exit(result.status ?? 1);
