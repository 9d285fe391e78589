/**
 * `npm run bench [-- <scenario> [flags]]`: runs one scenario (a folder of bench/ with a run.ts), or
 * every scenario in turn, each in its own process. The flags go to each scenario run; a scenario
 * ignores the flags of the others, and a flag no scenario knows stops the run before it starts
 * (bench/options.ts).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { checkFlagsFor, HARNESS_FLAGS, type Harness } from './options.ts';

const here = import.meta.dirname;
const scenarios = fs
  .readdirSync(here, { withFileTypes: true })
  // `seed` is a tool the scenarios use, not a scenario of its own.
  .filter((d) => d.isDirectory() && d.name !== 'seed' && fs.existsSync(path.join(here, d.name, 'run.ts')))
  .map((d) => d.name)
  .sort();
const [first, ...rest] = process.argv.slice(2);
const chosen = first && !first.startsWith('-') ? [first] : scenarios;
const flags = first && !first.startsWith('-') ? rest : process.argv.slice(2);
for (const name of chosen) {
  if (!scenarios.includes(name) || !Object.hasOwn(HARNESS_FLAGS, name)) {
    console.error(`Unknown scenario ${name}; known: ${scenarios.join(', ')}`);
    process.exit(2);
  }
}
checkFlagsFor(chosen as Harness[], flags);
const started = performance.now();
for (const name of chosen) {
  console.warn(`\n== ${name} ==`);
  const t0 = performance.now();
  const res = spawnSync(process.execPath, ['--import', 'tsx', path.join(here, name, 'run.ts'), ...flags], {
    stdio: 'inherit',
  });
  console.warn(`== ${name}: ${((performance.now() - t0) / 1000).toFixed(0)} s ==`);
  if (res.status !== 0) process.exit(res.status ?? 1);
}
if (chosen.length > 1)
  console.warn(`\nAll scenarios: ${((performance.now() - started) / 1000).toFixed(0)} s`);
