/**
 * The `## HTTP` section of docs/benchmarks.md keeps one `### <N> objects` block per seeded size, so a
 * 1,000,000-object run and the default 100,000-object run sit side by side: a run replaces only
 * the block of its own size. Other `### ` blocks (notes) are kept as they are, after the sizes.
 */
import fs from 'node:fs';
import path from 'node:path';
import { writeBenchSection } from '../report.ts';

const FILE = path.resolve(import.meta.dirname, '../../docs/benchmarks.md');
const BLOCK = /^### ([\d,]+) objects$/;
const ANY_BLOCK = /^### /;

/** The current `## HTTP` section's blocks, keyed by heading. */
function existingBlocks(): Map<string, string> {
  const blocks = new Map<string, string>();
  if (!fs.existsSync(FILE)) return blocks;
  const text = fs.readFileSync(FILE, 'utf8');
  const start = text.indexOf('\n## HTTP\n');
  if (start === -1) return blocks;
  const next = text.indexOf('\n## ', start + 1);
  const section = text.slice(start + 1, next === -1 ? text.length : next);
  let heading: string | undefined;
  let lines: string[] = [];
  const flush = () => {
    if (heading) blocks.set(heading, lines.join('\n').trim());
  };
  for (const line of section.split('\n')) {
    if (ANY_BLOCK.test(line)) {
      flush();
      heading = line;
      lines = [];
    } else if (heading) lines.push(line);
  }
  flush();
  return blocks;
}

/** Writes `intro` then every size's block (this run's replacing its own), smallest size first. */
export function writeHttpSection(intro: string, objects: number, block: string): void {
  const blocks = existingBlocks();
  blocks.set(`### ${objects.toLocaleString('en')} objects`, block.trim());
  const size = (heading: string) => Number(BLOCK.exec(heading)?.[1]?.replaceAll(',', '') ?? Infinity);
  // Array sort is stable: notes keep their order after every size.
  const ordered = [...blocks].sort(([a], [b]) => (size(a) === size(b) ? 0 : size(a) < size(b) ? -1 : 1));
  writeBenchSection(
    'HTTP',
    [intro.trim(), ...ordered.map(([heading, body]) => `${heading}\n\n${body}`)].join('\n\n'),
  );
}
