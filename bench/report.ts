import fs from 'node:fs';
import path from 'node:path';

const FILE = path.resolve(import.meta.dirname, '../docs/benchmarks.md');

/** Replaces (or appends) the `## <title>` section of docs/benchmarks.md, leaving the others alone. */
export function writeBenchSection(title: string, body: string) {
  const current = fs.existsSync(FILE) ? fs.readFileSync(FILE, 'utf8') : '# Benchmarks\n';
  const heading = `## ${title}`;
  const start = current.indexOf(`${heading}\n`);
  const section = `${heading}\n\n${body.trim()}\n`;
  if (start === -1) {
    fs.writeFileSync(FILE, `${current.trimEnd()}\n\n${section}`);
    return;
  }
  const next = current.indexOf('\n## ', start + heading.length);
  const end = next === -1 ? current.length : next + 1;
  fs.writeFileSync(
    FILE,
    `${current.slice(0, start)}${section}${next === -1 ? '' : '\n'}${current.slice(end)}`,
  );
}
