/**
 * Deterministic, roughly 1 KB data objects for seeding and for request bodies: a fixed-seed PRNG over
 * a small English vocabulary plus made-up words, so every run writes the same corpus.
 */

/** mulberry32: small, fast and seedable; the same seed gives the same sequence. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const COMMON = `the of and to a in is that for it as was with be by on not this are or from at which but
have an they you were there been one all we their has would when if so no more can out up into its
only other than then some what about could over also after them these two may first new any most`.split(
  /\s+/,
);

const TOPICAL = `report finance budget revenue quarter growth market customer product service account project
team meeting plan review policy contract invoice payment order shipment delivery supplier vendor price
cost expense income profit forecast target strategy risk compliance audit security network server
database backup storage cloud deployment release version feature issue ticket incident outage latency
performance capacity migration upgrade patch license support training onboarding hiring schedule
deadline milestone roadmap launch campaign analytics metric dashboard survey feedback research design
prototype testing quality standard document note record summary agenda minutes proposal estimate
approval request response decision action owner manager director engineer analyst consultant partner
client region warehouse inventory logistics energy health safety legal regulation insurance claim
portfolio asset equity loan credit transfer currency exchange inflation industry company business`.split(
  /\s+/,
);

const SYLLABLES = ['ba', 'ko', 'ri', 'tu', 'me', 'sa', 'lo', 'ne', 'vi', 'da', 'pe', 'zu', 'fa', 'gi', 'ho'];

/** Tags drawn for objects (0 to 3 each). */
export const TAGS = [
  'finance',
  'legal',
  'ops',
  'hr',
  'sales',
  'security',
  'q1',
  'q2',
  'q3',
  'q4',
  'urgent',
  'draft',
  'archive',
  'customer',
  'vendor',
  'audit',
];

const TYPES = ['document', 'note', 'record'] as const;
const STATUSES = ['draft', 'review', 'published', 'archived'];

/** What POST /v1/data accepts, plus the creation time seeding assigns. */
export interface SeedObject {
  title: string;
  type: (typeof TYPES)[number];
  content: string;
  tags: string[];
  metadata: Record<string, string>;
}

/** A generator of objects whose content is `minChars`..`maxChars` characters of word salad. */
export function objectGenerator(seed: number, minChars = 700, maxChars = 1300): () => SeedObject {
  const rand = rng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const made: string[] = [];
  for (let i = 0; i < 2000; i++) {
    let w = '';
    for (let s = 0, n = 2 + Math.floor(rand() * 3); s < n; s++) w += pick(SYLLABLES);
    made.push(w);
  }
  // Skewed draws: common words most often, topical words next, the long tail rarely.
  const word = () => {
    const x = rand();
    if (x < 0.45) return pick(COMMON);
    if (x < 0.85) return pick(TOPICAL);
    return pick(made);
  };
  return () => {
    const title = Array.from({ length: 3 + Math.floor(rand() * 5) }, () => pick(TOPICAL)).join(' ');
    const target = minChars + Math.floor(rand() * (maxChars - minChars + 1));
    const parts: string[] = [];
    let length = 0;
    let sentence = 0;
    while (length < target) {
      let w = word();
      if (sentence === 0) w = w[0]!.toUpperCase() + w.slice(1);
      sentence = (sentence + 1) % (6 + Math.floor(rand() * 10));
      if (sentence === 0) w += '.';
      parts.push(w);
      length += w.length + 1;
    }
    const tags = Array.from({ length: Math.floor(rand() * 4) }, () => pick(TAGS));
    return {
      title: title[0]!.toUpperCase() + title.slice(1),
      type: pick(TYPES),
      content: parts.join(' ').slice(0, target),
      tags: [...new Set(tags)],
      metadata: { author: `${pick(TOPICAL)} ${pick(made)}`, status: pick(STATUSES) },
    };
  };
}
