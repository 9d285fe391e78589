/**
 * Deterministic pseudo-English for the search benchmark: a ranked vocabulary (real English words
 * first, then pronounceable made-up words for the long tail) sampled with a Zipf law, so term
 * frequencies look like real text: a few words everywhere, most words rare.
 */

import { rng } from '../seed/words.ts';

const FUNCTION_WORDS = `the of and to a in is that for it as was with be by on not he this are or his from at
which but have an they you were her she there been one all we their has would when if so no more can
out up into its only other than then some what about could over also after them these two may first
new any most such our time very made like between where just both through those each well before
under while should because did same own here why how many must three still ever against much every`.split(
  /\s+/,
);

const CONTENT_WORDS = `report finance budget revenue quarter growth market customer product service account
project team meeting plan review policy contract invoice payment order shipment delivery supplier
vendor price cost expense income profit loss forecast target strategy risk compliance audit security
network server database backup storage cloud deployment release version feature issue ticket incident
outage latency performance capacity migration upgrade patch license support training onboarding
hiring salary benefit office travel schedule deadline milestone roadmap launch campaign analytics
metric dashboard survey feedback research design prototype testing quality standard document note
record summary agenda minutes proposal estimate approval request response decision action owner
manager director engineer analyst consultant partner client region country city warehouse inventory
logistics transport energy water health safety environment legal regulation tax insurance claim
portfolio asset equity debt interest loan credit bank transfer currency exchange rate inflation
economy industry sector company business organization department division unit function process
workflow system platform application interface integration data model analysis insight trend
pattern signal error warning failure recovery restore archive retention privacy consent identity
access permission role user group member admin password token certificate encryption firewall
monitoring alert notification email message channel call conference presentation slide chart table
spreadsheet memo letter brief handbook manual guide tutorial reference appendix chapter section
paragraph sentence word title author editor publisher library catalog index search query result
ranking relevance score filter sort page limit total count average median minimum maximum range
estimate actual variance baseline benchmark throughput volume traffic load peak spike trough cycle
season annual monthly weekly daily hourly morning evening night weekend holiday vacation remote
hybrid onsite building floor room desk equipment laptop monitor keyboard printer phone tablet
running planning building testing shipping hiring reporting financing marketing selling buying`.split(/\s+/);

const ONSETS = ['b', 'br', 'c', 'cr', 'd', 'dr', 'f', 'fl', 'g', 'gr', 'h', 'j', 'k', 'l', 'm', 'n', 'p'];
const ONSETS2 = ['pl', 'pr', 'qu', 'r', 's', 'sh', 'sl', 'st', 't', 'th', 'tr', 'v', 'w', 'z'];
const VOWELS = ['a', 'e', 'i', 'o', 'u', 'ai', 'ea', 'io', 'ou'];
const CODAS = ['', 'n', 'r', 's', 't', 'l', 'nd', 'st', 'rk', 'nce', 'tion', 'ment', 'ing', 'er', 'ly'];

/** The ranked vocabulary: function words, topical words, then `tail` made-up words. */
export function vocabulary(tail: number, seed = 7): string[] {
  const rand = rng(seed);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rand() * xs.length)]!;
  const seen = new Set<string>([...FUNCTION_WORDS, ...CONTENT_WORDS]);
  const words = [...FUNCTION_WORDS, ...CONTENT_WORDS];
  const onsets = [...ONSETS, ...ONSETS2];
  while (words.length < FUNCTION_WORDS.length + CONTENT_WORDS.length + tail) {
    const syllables = 1 + Math.floor(rand() * 3);
    let w = '';
    for (let i = 0; i < syllables; i++) w += pick(onsets) + pick(VOWELS);
    w += pick(CODAS);
    if (!seen.has(w)) {
      seen.add(w);
      words.push(w);
    }
  }
  return words;
}

/** Samples ranks 0..n-1 with P(rank k) proportional to 1/(k+1)^s, by binary search on the CDF. */
export function zipf(n: number, s: number, rand: () => number): () => number {
  const cdf = new Float64Array(n);
  let sum = 0;
  for (let k = 0; k < n; k++) {
    sum += 1 / (k + 1) ** s;
    cdf[k] = sum;
  }
  return () => {
    const x = rand() * sum;
    let lo = 0;
    let hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cdf[mid]! < x) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
}

export const TAGS = `finance legal ops hr sales marketing engineering security product support infra
q1 q2 q3 q4 urgent archive draft internal external customer partner board audit planning research
design data analytics release incident compliance travel hiring budget vendor contract tax`.split(/\s+/);
export const STATUSES = ['draft', 'review', 'published', 'archived'];
export const TYPES = ['document', 'note', 'record'] as const;

export interface GeneratedObject {
  title: string;
  type: (typeof TYPES)[number];
  content: string;
  tags: string[];
  metadata: Record<string, string>;
  created_at: string;
}

/** A generator of objects: titles of 3-8 topical words, content of ~30-1,500 words (median ~250). */
export function objectGenerator(words: readonly string[], seed: number) {
  const rand = rng(seed);
  const rank = zipf(words.length, 1.05, rand);
  const topical = FUNCTION_WORDS.length;
  const titleRank = zipf(words.length - topical, 1.0, rand);
  const authors = Array.from({ length: 200 }, (_, i) => `${words[topical + (i % 300)]} ${words[600 + i]}`);
  const start = Date.UTC(2024, 0, 1);
  const span = 2 * 365 * 86_400_000;
  const sentence = (n: number) => {
    const out: string[] = [];
    for (let i = 0; i < n; i++) out.push(words[rank()]!);
    out[0] = out[0]![0]!.toUpperCase() + out[0]!.slice(1);
    return `${out.join(' ')}.`;
  };
  return (): GeneratedObject => {
    const titleWords = Array.from(
      { length: 3 + Math.floor(rand() * 6) },
      () => words[topical + titleRank()]!,
    );
    // Log-normal length: many short objects, some long ones.
    const length = Math.min(1500, Math.max(30, Math.round(Math.exp(5.5 + 0.8 * gaussian(rand)))));
    const sentences: string[] = [];
    for (let n = 0; n < length; ) {
      const k = Math.min(length - n, 6 + Math.floor(rand() * 14));
      sentences.push(sentence(k));
      n += k;
    }
    const tagCount = Math.floor(rand() * 4);
    const tags = [
      ...new Set(Array.from({ length: tagCount }, () => TAGS[Math.floor(rand() * TAGS.length)]!)),
    ];
    return {
      title: titleWords.join(' ').replace(/^./, (c) => c.toUpperCase()),
      type: TYPES[Math.floor(rand() * 3)]!,
      content: sentences.join(' '),
      tags,
      metadata: {
        author: authors[Math.floor(rand() * authors.length)]!,
        status: STATUSES[Math.floor(rand() * STATUSES.length)]!,
      },
      created_at: new Date(start + Math.floor(rand() * span)).toISOString(),
    };
  };
}

function gaussian(rand: () => number): number {
  return Math.sqrt(-2 * Math.log(1 - rand())) * Math.cos(2 * Math.PI * rand());
}
