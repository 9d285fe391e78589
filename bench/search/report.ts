/** Writes the search benchmark's figures into docs/benchmarks.md, one subsection per database. */
import fs from 'node:fs';
import path from 'node:path';
import { writeBenchSection } from '../report.ts';
import { type HttpsSummary, httpsTable } from './https.ts';

export interface SearchBenchSummary {
  dialect: 'sqlite' | 'postgres';
  objects: number;
  totalObjects: number;
  iterations: number;
  seedSeconds: number;
  indexBytes: number;
  /** The engine's version and the cache setting its figures depend on. */
  server: string;
  results: Array<{ shape: string; example: string; avgTotal: number; http: number[]; raw: number[] }>;
  /** The same queries over HTTPS against `ads serve` in its own process (absent: not run). */
  https?: HttpsSummary | undefined;
}

const FILE = path.resolve(import.meta.dirname, '../../docs/benchmarks.md');
const TITLE = 'Search';
const NAMES = { sqlite: 'SQLite', postgres: 'PostgreSQL' } as const;

const INTRO = `Produced by \`npm run bench -- search [--objects N] [--db sqlite|postgres|both]\`.
One account holds N objects of pseudo-English (Zipf-distributed words from a fixed-seed generator,
30 to 1,500 words each, median about 250, tags and \`author\`/\`status\` metadata); 9 other accounts
hold N/10 each unless the subsection says otherwise. \`GET /v1/search\` is driven in process with
\`app.inject()\` (routing, validation, API-key auth, wildcard expansion, the ranked and counted query, the page's rows and excerpts; no
socket or TLS). "Raw" is the index work alone in the same run: wildcard expansion plus the ranked,
counted query with the page's rows (\`searchIndex\`: no auth, excerpts or serialisation). Each
query runs both ways back to back, HTTP first on even iterations and raw first on odd ones, so
neither side gains from the cache the other warmed. Before measuring, every query of a shape runs
once each way (from 2026-11-25 on; tables of earlier days warmed up with the first 10 of 20, so
about a tenth of their measured requests were a query's first run).
Latencies in milliseconds, sequential requests, \`limit=20\`, \`sort=relevance\`. Queries pick
words from the account's own objects by document frequency (one term: words in 0.5-3 % of the
objects; common term: 15-40 %).
From 2026-11-27 on, a second table per subsection has the same queries over HTTPS against the real
server (\`ads serve\` in its own process on the seeded database, autocannon in another, the bare
\`node:https\` baseline of the HTTP section in a third, answering with the shape's median answer
size): req/s (2xx answers only), latency percentiles, errors and the server's peak RSS (VmHWM, reset per leg), one
connection unless the line above the table says otherwise. Tables measured after 2026-11-27 14:45
also give the CPU steal during each row's legs (see "HTTP"). \`--https-seconds 0\` skips it.`;

const ms = (x: number) => x.toFixed(1);

const heading = (s: SearchBenchSummary) => `${NAMES[s.dialect]}, ${s.objects.toLocaleString('en')} objects`;

function subsection(s: SearchBenchSummary): string {
  const mb = (s.indexBytes / 1024 / 1024).toFixed(0);
  const lines = [
    `### ${heading(s)}`,
    '',
    `${s.objects.toLocaleString('en')} objects in the searched account, ${s.totalObjects.toLocaleString('en')} in all; ` +
      `seeded and indexed in ${s.seedSeconds.toFixed(0)} s (${Math.round(s.totalObjects / s.seedSeconds)} objects/s, ` +
      `${s.dialect === 'sqlite' ? 'group commit, up to 64 per transaction' : '500 per transaction'}); search tables ${mb} MiB; ${s.server}; ${s.iterations} requests per shape; ${new Date().toISOString().slice(0, 10)}.`,
    '',
    '| Query shape | Example | Avg hits | HTTP p50 | HTTP p95 | HTTP p99 | Raw p50 | Raw p95 | Raw p99 | HTTP/raw (p50) |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...s.results.map(
      (r) =>
        `| ${r.shape} | \`${decodeURIComponent(r.example.replace(/\+/g, ' ')).replaceAll('|', '\\|')}\` | ${r.avgTotal} | ` +
        `${r.http.map(ms).join(' | ')} | ${r.raw.map(ms).join(' | ')} | ${(r.http[0]! / r.raw[0]!).toFixed(2)} |`,
    ),
  ];
  if (s.https) {
    const h = s.https;
    lines.push(
      '',
      `Over HTTPS (\`ads serve\` in its own process, autocannon in another, the bare \`node:https\` baseline ` +
        `in a third answering the median answer size of the shape): ${h.connections} ` +
        `${h.connections === 1 ? 'connection (sequential requests)' : 'connections'}, ${h.seconds} s per leg, ` +
        `${h.rounds === 1 ? 'one baseline and one server leg per shape' : `median of ${h.rounds} alternating baseline and server legs`}; ` +
        `start-up to ready on this database ${h.startupMs.toLocaleString('en')} ms. Machine: ${h.machine}`,
      '',
      httpsTable(h),
    );
  }
  return lines.join('\n');
}

/**
 * Replaces the subsection of this database and corpus size in `## Search` where it stands, keeping
 * the others and their order (hand-written notes follow the table they discuss); a new one goes in
 * by database, SQLite first, then corpus size. A subsection headed by the database's name alone is
 * the 100,000-object one of earlier runs.
 */
export function writeSearchResults(s: SearchBenchSummary): void {
  const current = fs.existsSync(FILE) ? fs.readFileSync(FILE, 'utf8') : '';
  const start = current.indexOf(`## ${TITLE}\n`);
  const end = start === -1 ? -1 : current.indexOf('\n## ', start + 1);
  const section = start === -1 ? '' : current.slice(start, end === -1 ? undefined : end);
  const replaced = new Set([heading(s)]);
  if (s.objects === 100_000) replaced.add(NAMES[s.dialect]);
  const all = section
    .split('\n### ')
    .slice(1)
    .map((text) => ({ title: text.slice(0, text.indexOf('\n')), text: `### ${text.trim()}` }));
  const mine = { title: heading(s), text: subsection(s) };
  const at = all.findIndex((p) => replaced.has(p.title));
  const parts = all.filter((p) => !replaced.has(p.title));
  // Nothing before the first replaced subsection is dropped, so it goes back at the same index.
  if (at !== -1) parts.splice(at, 0, mine);
  else {
    const order = (title: string) => `${title.startsWith(NAMES.sqlite) ? 0 : 1} ${title}`;
    const after = parts.findIndex(
      (p) => order(p.title).localeCompare(order(mine.title), 'en', { numeric: true }) > 0,
    );
    parts.splice(after === -1 ? parts.length : after, 0, mine);
  }
  writeBenchSection(TITLE, [INTRO, ...parts.map((p) => p.text)].join('\n\n'));
}
