/** Writes the search benchmark's figures into docs/benchmarks.md, one subsection per database. */
import fs from 'node:fs';
import path from 'node:path';
import { writeBenchSection } from '../report.ts';

export interface SearchBenchSummary {
  dialect: 'sqlite' | 'postgres';
  objects: number;
  totalObjects: number;
  iterations: number;
  seedSeconds: number;
  indexBytes: number;
  results: Array<{ shape: string; example: string; avgTotal: number; http: number[]; raw: number[] }>;
}

const FILE = path.resolve(import.meta.dirname, '../../docs/benchmarks.md');
const TITLE = 'Search';
const NAMES = { sqlite: 'SQLite', postgres: 'PostgreSQL' } as const;

const INTRO = `Produced by \`node --import tsx bench/search/run.ts [--objects N] [--db sqlite|postgres]\`.
One account holds N objects of pseudo-English (Zipf-distributed words from a fixed-seed generator,
30 to 1,500 words each, median about 250, tags and \`author\`/\`status\` metadata); 9 other accounts
hold N/10 each. \`GET /v1/search\` is driven in process with \`app.inject()\` (routing, validation,
API-key auth, wildcard expansion, the ranked and counted query, the page's rows and excerpts; no
socket or TLS). "Raw" is the index work alone in the same run: wildcard expansion plus the ranked,
counted query with the page's rows (\`searchIndex\`: no auth, excerpts or serialisation).
Latencies in milliseconds, sequential requests, \`limit=20\`, \`sort=relevance\`. Queries pick
words from the account's own objects by document frequency (one term: words in 0.5-3 % of the
objects; common term: 15-40 %).`;

const ms = (x: number) => x.toFixed(1);

function subsection(s: SearchBenchSummary): string {
  const mb = (s.indexBytes / 1024 / 1024).toFixed(0);
  const lines = [
    `### ${NAMES[s.dialect]}`,
    '',
    `${s.objects.toLocaleString('en')} objects in the searched account, ${s.totalObjects.toLocaleString('en')} in all; ` +
      `seeded and indexed in ${s.seedSeconds.toFixed(0)} s (${Math.round(s.totalObjects / s.seedSeconds)} objects/s, ` +
      `500 per transaction); search tables ${mb} MiB; ${s.iterations} requests per shape; ${new Date().toISOString().slice(0, 10)}.`,
    '',
    '| Query shape | Example | Avg hits | HTTP p50 | HTTP p95 | HTTP p99 | Raw p50 | Raw p95 | Raw p99 | HTTP/raw (p50) |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...s.results.map(
      (r) =>
        `| ${r.shape} | \`${decodeURIComponent(r.example.replace(/\+/g, ' ')).replaceAll('|', '\\|')}\` | ${r.avgTotal} | ` +
        `${r.http.map(ms).join(' | ')} | ${r.raw.map(ms).join(' | ')} | ${(r.http[0]! / r.raw[0]!).toFixed(2)} |`,
    ),
  ];
  return lines.join('\n');
}

/** Replaces this database's subsection of `## Search`, keeping the other database's figures. */
export function writeSearchResults(s: SearchBenchSummary): void {
  const current = fs.existsSync(FILE) ? fs.readFileSync(FILE, 'utf8') : '';
  const start = current.indexOf(`## ${TITLE}\n`);
  const end = start === -1 ? -1 : current.indexOf('\n## ', start + 1);
  const section = start === -1 ? '' : current.slice(start, end === -1 ? undefined : end);
  const keep = (['sqlite', 'postgres'] as const)
    .filter((d) => d !== s.dialect)
    .map((d) => {
      const at = section.indexOf(`### ${NAMES[d]}\n`);
      if (at === -1) return null;
      const stop = section.indexOf('\n### ', at + 1);
      return { d, text: section.slice(at, stop === -1 ? undefined : stop).trim() };
    })
    .filter((x) => x !== null);
  const parts = [...keep, { d: s.dialect, text: subsection(s) }]
    .sort((a, b) => a.d.localeCompare(b.d))
    .reverse();
  writeBenchSection(TITLE, [INTRO, ...parts.map((p) => p.text)].join('\n\n'));
}
