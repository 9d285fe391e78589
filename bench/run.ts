/**
 * `npm run bench [-- <scenario> [flags]]`: runs one scenario (a folder of bench/ with a run.ts), or
 * every scenario in turn, each in its own process. Flags after the scenario go to it.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

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
  if (!scenarios.includes(name)) {
    console.error(`Unknown scenario ${name}; known: ${scenarios.join(', ')}`);
    process.exit(2);
  }
  console.warn(`\n== ${name} ==`);
  const res = spawnSync(process.execPath, ['--import', 'tsx', path.join(here, name, 'run.ts'), ...flags], {
    stdio: 'inherit',
  });
  if (res.status !== 0) process.exit(res.status ?? 1);
}
