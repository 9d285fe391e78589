// Plan -> tsquery text, and a document -> tsvector text. Lexemes are written literally (`::tsvector`,
// `::tsquery`), never through to_tsvector, so PostgreSQL's parser and locale cannot re-split words.
//
// Lexemes: a stem of title/tags/content as itself, its exact word as `=word`; the indexed metadata
// keys as `author:stem` / `author=word`; the type as `#note`. No stem or word contains `=`, `:` or
// `#`, so the families never collide. Weights: A title, B tags, C content, D metadata and type.
import {
  cachedStemmer,
  FREE_TEXT_FIELDS,
  type IndexDocument,
  indexedWords,
  META_FIELDS,
  type TextField,
} from './document.ts';
import { type Leaf, type Plan, positiveLeaves } from './plan.ts';
import type { SearchFilter } from './search-index.ts';
import { stemWord } from './text.ts';

const WEIGHT: Record<TextField, string> = {
  title: 'A',
  tags: 'B',
  content: 'C',
  author: 'D',
  status: 'D',
  description: 'D',
};
const isMeta = (f: TextField) => (META_FIELDS as readonly string[]).includes(f);

/** ts_rank weights {D, C, B, A}: title > tags > content > metadata (as written in search_page, migration 0007). */
export const RANK_WEIGHTS = '{0.1, 0.2, 0.4, 1.0}';

/** PostgreSQL stores positions up to 16383 and at most 256 per lexeme. */
const MAX_POSITION = 16383;
/**
 * The last position a word keeps as it is. Words past it are all stored at MAX_POSITION, and the
 * position between is left empty, so a word stored there is never next (`<->`) to another: a phrase
 * past the first 16,381 positions is not found, but no phrase is found whose words are not adjacent
 * in the text (clamping at 16383 alone made a word at 16382 adjacent to every later one).
 */
const LAST_EXACT_POSITION = MAX_POSITION - 2;
const MAX_POSITIONS_PER_LEXEME = 256;
/**
 * A stem's positions past its 256th go to spill lexemes `stem~2` ... `stem~8` in `vector`, 256
 * each, so that a phrase is found after a word's 256th occurrence, up to its 2,048th (rows
 * indexed since migration 0017). Words hold only letters and digits, so no stem contains `~`.
 */
export const SPILL_LEVELS = 8;
const spillLexeme = (lexeme: string, level: number) => `${lexeme}~${level}`;
/** tsvector is limited to 1 MB; content past this estimate is not indexed (docs/search.md). */
export const VECTOR_BUDGET_BYTES = 800_000;

const stemLexeme = (f: TextField, stem: string) => (isMeta(f) ? `${f}:${stem}` : stem);
const wordLexeme = (f: TextField, word: string) => (isMeta(f) ? `${f}=${word}` : `=${word}`);
const quote = (lexeme: string) => `'${lexeme.replaceAll('\\', '\\\\').replaceAll("'", "''")}'`;

/** The lexeme family and weight letters that select `fields` (all free-text fields need no letters). */
function target(fields: readonly TextField[]): { field: TextField; weights: string } {
  const field = fields[0]!;
  if (isMeta(field)) return { field, weights: '' };
  const all = FREE_TEXT_FIELDS.every((f) => fields.includes(f));
  return { field, weights: all ? '' : fields.map((f) => WEIGHT[f]).join('') };
}

/**
 * A leaf as a tsquery. `spill`: the query runs on `vector`, so each word of a phrase also matches
 * its spill lexemes (a single stem needs none: its first lexeme is there whenever a spill is).
 */
function leafQuery(leaf: Leaf, spill: boolean, only?: TextField): string {
  if (leaf.kind === 'type') return `(${leaf.types.map((t) => quote(`#${t}`)).join(' | ')})`;
  const { field, weights } = target(only ? [only] : leaf.fields);
  const w = weights === '' ? '' : `:${weights}`;
  switch (leaf.kind) {
    case 'stems': {
      const operand = (s: string) => {
        const lexeme = stemLexeme(field, s);
        if (!spill || leaf.stems.length === 1) return quote(lexeme) + w;
        const levels = Array.from(
          { length: SPILL_LEVELS - 1 },
          (_, i) => quote(spillLexeme(lexeme, i + 2)) + w,
        );
        return `(${[quote(lexeme) + w, ...levels].join(' | ')})`;
      };
      return `(${leaf.stems.map(operand).join(' <-> ')})`;
    }
    case 'prefix':
      return `${quote(wordLexeme(field, leaf.prefix))}:*${weights}`;
    case 'words':
      return `(${leaf.words.map((word) => quote(wordLexeme(field, word)) + w).join(' | ')})`;
  }
}

/** The whole plan as a tsquery (matching, on `vector`). */
export function compileTsquery(plan: Plan): string {
  switch (plan.kind) {
    case 'not':
      return `!${leafQuery(plan.leaf, true)}`;
    case 'and':
      return `(${plan.children.map(compileTsquery).join(' & ')})`;
    case 'or':
      return `(${plan.children.map(compileTsquery).join(' | ')})`;
    default:
      return leafQuery(plan, true);
  }
}

/**
 * What every row passing `filters` holds in `vector`, as a tsquery, or null when no filter has
 * lexemes there: the type's `#type`, each word of a tag as an exact word (`'=word'`), each word of
 * an indexed metadata key's value (`'status=word'`). ANDed with the query, it lets the GIN index
 * drop most rows that fail the filters before their heap rows are read. It is a superset, and
 * search_page still applies the filters themselves. No phrases and no weights (a tag word may
 * also match in the title or content): either would make GIN recheck every candidate against its
 * full vector, the largest column.
 */
export function filterTsquery(filters: readonly SearchFilter[]): string | null {
  const parts: string[] = [];
  for (const f of filters) {
    if (f.kind === 'type') {
      parts.push(quote(`#${f.value}`));
      continue;
    }
    const field = f.kind === 'tag' ? 'tags' : META_FIELDS.find((k) => k === f.key);
    if (field === undefined) continue;
    for (const word of new Set(indexedWords(f.value))) parts.push(quote(wordLexeme(field, word)));
  }
  return parts.length > 0 ? parts.join(' & ') : null;
}

/**
 * What ts_rank scores against the `rank` vector (stems of title, tags and content only): each
 * positive text leaf in stem form (a wildcard by its stem prefix or its words' stems); metadata and
 * type leaves do not rank. Null when nothing is left to rank.
 */
export function rankTsquery(plan: Plan): string | null {
  const parts: string[] = [];
  for (const leaf of positiveLeaves(plan)) {
    if (leaf.kind === 'type' || isMeta(leaf.fields[0]!)) continue;
    const { weights } = target(leaf.fields);
    const w = weights === '' ? '' : `:${weights}`;
    if (leaf.kind === 'stems') parts.push(leafQuery(leaf, false));
    else if (leaf.kind === 'prefix') parts.push(`${quote(leaf.prefix)}:*${weights}`);
    else parts.push(`(${[...new Set(leaf.words.map(stemWord))].map((s) => quote(s) + w).join(' | ')})`);
  }
  return parts.length > 0 ? parts.join(' | ') : null;
}

/** Any positive leaf that can match in `field`, restricted to it; null when none can. */
export function fieldTsquery(plan: Plan, field: 'title' | 'tags'): string | null {
  const leaves = positiveLeaves(plan).filter((l) => l.kind !== 'type' && l.fields.includes(field));
  return leaves.length > 0 ? leaves.map((l) => leafQuery(l, false, field)).join(' | ') : null;
}

/**
 * The title and tag tiers of a query of one word, prefix or expanded wildcard, as a query on
 * `head`: exactly the matches that score above every content-only match. Null for other queries,
 * and when the word is searched outside titles and tags.
 */
export function tierTsquery(plan: Plan): string | null {
  if (plan.kind !== 'stems' && plan.kind !== 'prefix' && plan.kind !== 'words') return null;
  if (plan.kind === 'stems' && plan.stems.length > 1) return null;
  const tiers = [fieldTsquery(plan, 'title'), fieldTsquery(plan, 'tags')].filter((t) => t !== null);
  return tiers.length > 0 ? tiers.join(' | ') : null;
}

class VectorBuilder {
  /** Every lexeme written, spill lexemes included; `level` (on a first lexeme) is its last spill. */
  private readonly entries = new Map<string, { last: number; level: number; positions: string[] }>();
  /** Lexemes that had more positions than `maxPositions` (with their spills, if any). */
  readonly cut = new Set<string>();
  bytes = 0;

  constructor(private readonly maxPositions = MAX_POSITIONS_PER_LEXEME) {}

  private open(lexeme: string) {
    const entry = { last: 0, level: 1, positions: [] as string[] };
    this.entries.set(lexeme, entry);
    this.bytes += Buffer.byteLength(lexeme) + 8;
    return entry;
  }

  /** `spill`: positions past the lexeme's first `maxPositions` go to its spill lexemes. */
  add(lexeme: string, position: number, weight: string, spill = false): void {
    const pos = position <= LAST_EXACT_POSITION ? position : MAX_POSITION;
    const first = this.entries.get(lexeme) ?? this.open(lexeme);
    if (first.last === pos) return;
    first.last = pos;
    let entry = first.level === 1 ? first : this.entries.get(spillLexeme(lexeme, first.level))!;
    if (entry.positions.length >= this.maxPositions) {
      if (!spill || first.level >= SPILL_LEVELS) {
        this.cut.add(lexeme);
        return;
      }
      first.level++;
      entry = this.open(spillLexeme(lexeme, first.level));
    }
    entry.positions.push(`${pos}${weight}`);
    this.bytes += 2;
  }

  toString(): string {
    return [...this.entries].map(([lex, e]) => `${quote(lex)}:${e.positions.join(',')}`).join(' ');
  }
}

/**
 * The `rank` vector's marks (rows indexed since migration 0009): `~` says the row has them, and
 * `~stem` that the stem had more than RANK_POSITIONS positions, so the vector lists only the first.
 * Words hold only letters and digits, so no stem begins with `~`. Marks have no positions and match
 * no ranking query, so they leave ts_rank's value unchanged.
 */
export const RANK_MARKED = "'~'";
const cutMark = (stem: string) => quote(`~${stem}`);

/**
 * A phrase over all free-text fields can be checked on `rank`, which holds the same stems at the
 * same positions as `vector`, only fewer of them: complete unless a stem carries a cut mark. For a
 * plan that is such a phrase, or an AND with such phrases among its children: `match`, the plan
 * with each of those phrases as an AND of its stems (GIN answers it without rechecking any row's
 * vector), `phrases`, the phrases ANDed (for `rank`), `vectorPhrases`, the same for `vector` (with
 * the spill lexemes), and `gate`, which holds on `rank` when the phrases do or when `rank` cannot
 * decide (no marks, or a cut mark of one of their stems). A row matches when `match` holds, `gate`
 * holds on `rank`, and `phrases` holds on `rank` or, failing that, `vectorPhrases` on `vector`.
 * Null when no phrase can be checked this way.
 */
export function rankPhrases(
  plan: Plan,
): { match: string; phrases: string; vectorPhrases: string; gate: string; pairs: number[] } | null {
  const checkable = (p: Plan): p is Leaf & { kind: 'stems' } =>
    p.kind === 'stems' && p.stems.length > 1 && FREE_TEXT_FIELDS.every((f) => p.fields.includes(f));
  const children = plan.kind === 'and' ? plan.children : [plan];
  const phrases = children.filter(checkable);
  if (phrases.length === 0) return null;
  const match = children.map((c) =>
    checkable(c) ? `(${c.stems.map(quote).join(' & ')})` : compileTsquery(c),
  );
  const stems = new Set(phrases.flatMap((p) => p.stems));
  const all = phrases.map((p) => leafQuery(p, false)).join(' & ');
  return {
    match: match.length === 1 ? match[0]! : `(${match.join(' & ')})`,
    phrases: all,
    vectorPhrases: phrases.map((p) => leafQuery(p, true)).join(' & '),
    gate: [`(${all})`, `!${RANK_MARKED}`, ...[...stems].map(cutMark)].join(' | '),
    pairs: sketchProbes(phrases.map((p) => p.stems)),
  };
}

/**
 * The pair sketch (migration 0019): a Bloom filter of the pairs of adjacent stems in a row's
 * title, tags and content, in the row's `pairs` column. A phrase candidate whose sketch lacks one
 * of the phrase's pairs cannot hold the phrase, so search_page rules it out without reading its
 * `rank` vector, which for a long object is several kilobytes to decompress or fetch out of line.
 * Two bits per pair; SKETCH_BITS_PER_PAIR to 2x that many bits per pair, a power of two from
 * SKETCH_MIN_BITS to SKETCH_MAX_BITS, so a bit's index is a hash masked by the sketch's length
 * (`get_bit` in SQL reads bit `i` of byte `i / 8`, least significant first). No false negatives:
 * every pair of the text is set. False positives (a few percent) are checked on `rank` as before.
 */
const SKETCH_BITS_PER_PAIR = 8;
const SKETCH_MIN_BITS = 128;
const SKETCH_MAX_BITS = 8192;
/**
 * search_page tests this many bits: the first two pairs of the query's phrases (repeated if fewer).
 * Migration 0019 wrote the four tests into its SQL, so changing this needs a new migration.
 */
export const SKETCH_PROBES = 4;

/** FNV-1a over `a`, a space (no stem holds one), `b`; then two murmur3 finalisers: two 32-bit hashes. */
export function pairHashes(a: string, b: string): [number, number] {
  let h = 0x811c9dc5;
  for (let i = 0; i < a.length; i++) h = Math.imul(h ^ a.charCodeAt(i), 0x01000193);
  h = Math.imul(h ^ 0x20, 0x01000193);
  for (let i = 0; i < b.length; i++) h = Math.imul(h ^ b.charCodeAt(i), 0x01000193);
  return [mix(h), mix(h ^ 0x9e3779b9)];
}

function mix(x: number): number {
  let h = x;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h | 0;
}

/** The hashes search_page tests for these phrases (each a list of stems): SKETCH_PROBES of them. */
export function sketchProbes(phrases: readonly (readonly string[])[]): number[] {
  const hashes: number[] = [];
  for (const stems of phrases) {
    for (let i = 0; i + 1 < stems.length; i++) hashes.push(...pairHashes(stems[i]!, stems[i + 1]!));
  }
  if (hashes.length === 0) return [];
  return Array.from({ length: SKETCH_PROBES }, (_, i) => hashes[i % hashes.length]!);
}

/** Collects a document's adjacent stem pairs, then writes them as a sketch. */
class PairSketch {
  private readonly hashes: number[] = [];

  add(a: string, b: string): void {
    const [h1, h2] = pairHashes(a, b);
    this.hashes.push(h1, h2);
  }

  toBuffer(): Buffer {
    const pairs = this.hashes.length / 2;
    let bits = SKETCH_MIN_BITS;
    while (bits < pairs * SKETCH_BITS_PER_PAIR && bits < SKETCH_MAX_BITS) bits *= 2;
    const sketch = Buffer.alloc(bits / 8);
    for (const h of this.hashes) {
      const bit = h & (bits - 1);
      sketch[bit >> 3]! |= 1 << (bit & 7);
    }
    return sketch;
  }
}

const ORDER: readonly TextField[] = ['title', 'tags', 'author', 'status', 'description'];

/** ts_rank's sum over a word's occurrences converges fast; more positions only cost reading time. */
const RANK_POSITIONS = 8;

/**
 * The tsvector texts of a document: `vector` (every lexeme, for matching), `head` (title and tags,
 * for the score's tiers), `rank` (stems of title, tags and content with a few positions each: the
 * small vector ts_rank reads for every match), and the distinct words indexed. Content comes last
 * and stops at VECTOR_BUDGET_BYTES.
 */
export function buildVectors(doc: IndexDocument): {
  vector: string;
  head: string;
  rank: string;
  pairs: Buffer | null;
  words: string[];
} {
  const stem = cachedStemmer();
  const vector = new VectorBuilder();
  const head = new VectorBuilder();
  const rank = new VectorBuilder(RANK_POSITIONS);
  const pairs = new PairSketch();
  const words = new Set<string>();
  let position = 1;
  const addField = (field: TextField): boolean => {
    const free = FREE_TEXT_FIELDS.includes(field);
    for (const segment of doc.fields[field]) {
      let previous: string | null = null;
      for (const word of segment) {
        if (vector.bytes > VECTOR_BUDGET_BYTES) return false;
        const s = stem(word);
        if (free) {
          if (previous !== null) pairs.add(previous, s);
          previous = s;
        }
        vector.add(stemLexeme(field, s), position, WEIGHT[field], true);
        vector.add(wordLexeme(field, word), position, WEIGHT[field]);
        if (field === 'title' || field === 'tags') {
          head.add(stemLexeme(field, s), position, WEIGHT[field]);
          head.add(wordLexeme(field, word), position, WEIGHT[field]);
        }
        if (free) rank.add(s, position, WEIGHT[field]);
        words.add(word);
        position++;
      }
      position++; // a gap, so that `<->` never joins two fields or two tags
    }
    return true;
  };
  for (const field of ORDER) addField(field);
  vector.add(`#${doc.type}`, position, 'D');
  position += 2;
  addField('content');
  const ranked = rank.toString();
  const marks = [RANK_MARKED, ...[...rank.cut].map(cutMark)].join(' ');
  return {
    vector: vector.toString(),
    head: head.toString(),
    rank: ranked === '' ? marks : `${ranked} ${marks}`,
    // Past LAST_EXACT_POSITION words share one position, where `vector` holds no phrase; a text that
    // long has more pairs than a sketch's 8,192 bits tell apart, so every candidate is checked.
    pairs: position > MAX_POSITION ? null : pairs.toBuffer(),
    words: [...words].sort(),
  };
}
