/**
 * The benchmark's queries, chosen from the seeded account's own words by document frequency (counted
 * while seeding) so that every
 * shape asks for words that exist, in the same proportions at any corpus size.
 */
import { matchesWildcard } from '../../src/search/text.ts';
import { objectGenerator, vocabulary } from './corpus.ts';

/** Word -> number of the searched account's objects holding it. */
export type DocFrequencies = ReadonlyMap<string, number>;

export interface Shape {
  name: string;
  /** URL query strings, used in turn. */
  queries: string[];
}

const PER_SHAPE = 20;

function wordsWithin(df: DocFrequencies, min: number, max: number): string[] {
  const all = [...df]
    .filter(([w, n]) => n >= min && n <= max && w.length >= 5)
    .map(([w]) => w)
    .sort();
  // Evenly spaced through the alphabet, so the picks do not share a prefix.
  const step = Math.max(1, Math.floor(all.length / PER_SHAPE));
  return all.filter((_, i) => i % step === 0).slice(0, PER_SHAPE);
}

/** Two-word phrases that occur in the corpus, neither word among the most frequent 150. */
function phrases(): string[] {
  const words = vocabulary(30_000);
  const frequent = new Set(words.slice(0, 150));
  const next = objectGenerator(words, 1);
  const out: string[] = [];
  while (out.length < PER_SHAPE) {
    const tokens = next()
      .content.toLowerCase()
      .split(/[^a-z]+/)
      .filter(Boolean);
    for (let i = 0; i + 1 < tokens.length && out.length < PER_SHAPE; i += 7) {
      if (!frequent.has(tokens[i]!) && !frequent.has(tokens[i + 1]!))
        out.push(`${tokens[i]} ${tokens[i + 1]}`);
    }
  }
  return out;
}

/**
 * Patterns built from `words` (prefixes, or inner substrings when `inner`) that match at least two
 * of the account's words in about as many objects as a one-term query: the figure is then the
 * wildcard machinery, not the ranking of a huge result set (the common-term row shows that).
 */
function patterns(df: DocFrequencies, words: string[], maxDocs: number, inner: boolean) {
  const out: string[] = [];
  for (const w of words) {
    const candidates: string[] = [];
    for (let len = 3; len < w.length; len++) {
      if (inner) for (let at = 1; at + len < w.length; at++) candidates.push(`*${w.slice(at, at + len)}*`);
      else candidates.push(`${w.slice(0, len)}*`);
    }
    for (const pattern of candidates) {
      let n = 0;
      let docs = 0;
      for (const [word, count] of df) {
        if (matchesWildcard(pattern, word)) {
          n++;
          docs += count;
        }
      }
      if (n >= 2 && docs <= maxDocs) {
        out.push(pattern);
        break;
      }
    }
  }
  return out;
}

const q = (query: string, extra = '') => `q=${encodeURIComponent(query)}${extra}`;

/** One list of queries per shape: one-term, two-term, phrase, prefix, infix, filtered, common term. */
export function pickQueries(df: DocFrequencies, objects: number): Shape[] {
  const mid = wordsWithin(df, Math.ceil(objects * 0.005), Math.ceil(objects * 0.03));
  const common = wordsWithin(df, Math.ceil(objects * 0.15), Math.ceil(objects * 0.4));
  if (mid.length < 2 || common.length < 1) throw new Error('corpus too small to pick benchmark words');
  const pair = (i: number) => `${mid[i % mid.length]} ${mid[(i + 1) % mid.length]}`;
  const maxDocs = Math.ceil(objects * 0.03);
  const prefixes = patterns(df, mid, maxDocs, false);
  const infixes = patterns(df, mid, maxDocs, true);
  if (prefixes.length === 0 || infixes.length === 0)
    throw new Error('no wildcard patterns of the wanted size');
  return [
    { name: 'one term', queries: mid.map((w) => q(w)) },
    { name: 'two terms', queries: mid.map((_, i) => q(pair(i))) },
    { name: 'phrase', queries: phrases().map((p) => q(`"${p}"`)) },
    { name: 'prefix wildcard', queries: prefixes.map((p) => q(p)) },
    { name: 'infix wildcard', queries: infixes.map((p) => q(p)) },
    {
      name: 'filtered',
      queries: mid.map((w) =>
        q(w, '&filter=type:document&filter=status:published&from=2024-06-01&to=2025-05-31'),
      ),
    },
    { name: 'one common term', queries: common.map((w) => q(w)) },
  ];
}
