// Plan -> one FTS5 MATCH expression, and the FTS5 row of a document. The FTS5 table gets text that
// is already folded, split and stemmed (document.ts), so its `ascii` tokenizer only splits on spaces.
import {
  cachedStemmer,
  type IndexDocument,
  indexedSegments,
  META_FIELDS,
  TEXT_FIELDS,
  type TextField,
} from './document.ts';
import { isPositivePlan, type Leaf, negatePlan, type Plan } from './plan.ts';
import type { SearchFilter } from './search-index.ts';

/**
 * Column order of `search_fts` (migration 0002). `<field>` columns hold stems (terms, phrases);
 * `<field>_x` columns hold the exact folded words (wildcards); `type` holds the object's type.
 */
export const FTS_COLUMNS = ['type', ...TEXT_FIELDS, ...TEXT_FIELDS.map((f) => `${f}_x` as const)] as const;

/** Placed between tags so that a phrase never spans two of them; no query can produce it. */
export const SEGMENT_BREAK = '\u00b7';

const exact = (f: TextField) => `${f}_x`;

/** bm25 column weights, in FTS_COLUMNS order: title > tags > content > metadata and type. */
function weights(pick: (column: string) => number): string {
  return FTS_COLUMNS.map((c) => pick(c).toFixed(1)).join(', ');
}
const BASE = (c: string) => c.replace(/_x$/, '');
/** The relevance weight of a field's columns: title > tags > content > metadata. */
export function fieldWeight(field: string): number {
  if (field === 'title') return 10;
  if (field === 'tags') return 5;
  if (field === 'content') return 1;
  return 0.5;
}
export const RANK_WEIGHTS = weights((c) => fieldWeight(BASE(c)));
/** Weights under which bm25 is non-zero exactly when a matched term is in the title (or the tags). */
export const TITLE_WEIGHTS = weights((c) => (BASE(c) === 'title' ? 1 : 0));
export const TAGS_WEIGHTS = weights((c) => (BASE(c) === 'tags' ? 1 : 0));

/**
 * FTS5 rowids cluster by account: `account seq * 2^32 + n`. A rowid range then confines the
 * match and bm25's per-row work to one account. Both parts stay within 2^53 (safe integers).
 */
export const DOCS_PER_ACCOUNT = 2 ** 32;
export const MAX_ACCOUNT_SEQ = 2 ** 21 - 1;

/** Width of an account tag: base 36 in 5 characters covers MAX_ACCOUNT_SEQ (36^5 > 2^21). */
const TAG_CHARS = 5;

/**
 * The tag that starts every token of the account's FTS5 rows and of its queries (migration 0020):
 * its `seq` in base 36, fixed width, so `<tag>bab` * finds only the account's words that start
 * with `bab`. bm25 counts each query phrase's rows over the whole table (FTS5 runs that count
 * through xQueryPhrase, which takes no rowid bound); with tagged tokens only the account's rows
 * can hold the phrase, so neither a score nor the order depends on how often other accounts use a
 * word (docs/search.md "Tenancy"). The table's row count and average length stay global.
 * Tag characters are ASCII letters and digits, which the `ascii` tokenizer keeps in a token.
 */
export function accountTag(seq: number): string {
  return seq.toString(36).padStart(TAG_CHARS, '0');
}

/** The account seq of an FTS5 rowid (see DOCS_PER_ACCOUNT). */
export const seqOfDoc = (doc: number): number => Math.floor(doc / DOCS_PER_ACCOUNT);

const quote = (token: string) => `"${token.replaceAll('"', '""')}"`;
const columns = (names: string[]) => (names.length === 1 ? names[0]! : `{${names.join(' ')}}`);

/** `words` (no ASCII separator in any) as one FTS5 string of tagged tokens: a phrase when several. */
const tagged = (tag: string, words: readonly string[]) => quote(words.map((w) => tag + w).join(' '));

function leafSql(leaf: Leaf, tag: string): string {
  switch (leaf.kind) {
    case 'stems':
      return `(${columns([...leaf.fields])} : ${tagged(tag, leaf.stems)})`;
    case 'prefix':
      return `(${columns(leaf.fields.map(exact))} : ${tagged(tag, [leaf.prefix])} *)`;
    case 'words':
      return `(${columns(leaf.fields.map(exact))} : (${leaf.words.map((w) => tagged(tag, [w])).join(' OR ')}))`;
    case 'type':
      return `(type : (${leaf.types.map((t) => tagged(tag, [t])).join(' OR ')}))`;
  }
}

/** A positive plan as FTS5 syntax; FTS5's NOT is binary, so `a AND NOT b` becomes `a NOT b`. */
function planSql(plan: Plan, tag: string): string {
  switch (plan.kind) {
    case 'not':
      throw new Error('a NOT reached the FTS5 compiler without a positive left side');
    case 'or':
      return `(${plan.children.map((c) => planSql(c, tag)).join(' OR ')})`;
    case 'and': {
      const positive = plan.children.filter(isPositivePlan);
      const negative = plan.children.filter((c) => !isPositivePlan(c));
      const base = `(${positive.map((c) => planSql(c, tag)).join(' AND ')})`;
      if (negative.length === 0) return base;
      // The complement of a non-positive plan is positive (see plan.ts), so it can follow NOT.
      return `(${base} NOT (${negative.map((n) => planSql(negatePlan(n), tag)).join(' OR ')}))`;
    }
    default:
      return leafSql(plan, tag);
  }
}

/** The MATCH expression for a plan, over the rows of the account whose tag is `tag` (accountTag). */
export function compileMatch(plan: Plan, tag: string): string {
  return planSql(plan, tag);
}

/**
 * For a query of one word or wildcard: that leaf restricted to the title and tag columns, as a
 * MATCH expression. Its matches are exactly the query's matches in the title and tag tiers (bm25
 * under TITLE_WEIGHTS or TAGS_WEIGHTS is non-zero exactly when the leaf occurs there). Null for
 * any other query, or one that cannot match in the title or tags. Phrases are left out: they
 * rarely have enough matches for the cut, and counting one costs as much as ranking it.
 */
export function tierMatch(plan: Plan, tag: string): string | null {
  if (plan.kind === 'stems' && plan.stems.length > 1) return null;
  if (plan.kind !== 'stems' && plan.kind !== 'prefix' && plan.kind !== 'words') return null;
  const fields = plan.fields.filter((f) => f === 'title' || f === 'tags');
  return fields.length > 0 ? leafSql({ ...plan, fields }, tag) : null;
}

/**
 * What every row passing `filters` matches in FTS5, as a MATCH expression, or null when no filter
 * has an FTS5 column: a `type:` filter as the type column holds it, a `tag:` filter as a phrase of
 * its words in the exact tag column, a filter on an indexed metadata key (author, status,
 * description) as a phrase of its words in that key's exact column. The value of an object that
 * passes the filter was indexed as exactly those words in a row, so the phrase matches it; the
 * converse does not hold (`tag:b` also finds the tag `a b`), so the filters are still applied to
 * the rows. ANDed with the query's own MATCH, it finds the candidates from the index's doclists
 * instead of looking up the row of every match of the query.
 */
export function filterMatch(filters: readonly SearchFilter[], tag: string): string | null {
  const phrases: string[] = [];
  for (const f of filters) {
    if (f.kind === 'type') {
      phrases.push(leafSql({ kind: 'type', types: [f.value] }, tag));
      continue;
    }
    const field = f.kind === 'tag' ? 'tags' : META_FIELDS.find((k) => k === f.key);
    if (field === undefined) continue;
    // One phrase per segment (an overlong word breaks the value where it stands, as it broke the
    // indexed value); a value with no words is indexed as nothing: no phrase can stand for it.
    for (const words of indexedSegments(f.value)) {
      if (words.length > 0) phrases.push(`(${exact(field)} : ${tagged(tag, words)})`);
    }
  }
  return phrases.length > 0 ? phrases.join(' AND ') : null;
}

/**
 * The FTS5 column values of a document, in FTS_COLUMNS order, every token tagged with `tag` (its
 * account's accountTag; '' for entries written before migration 0020). Words and stems hold no
 * ASCII separator (text.ts splits on anything but letters and digits), so each is one token.
 */
export function ftsRow(doc: IndexDocument, tag: string): string[] {
  const stem = cachedStemmer();
  const space = ` ${tag}`;
  const join = (segments: string[][], map: (w: string) => string) =>
    segments.map((s) => (s.length === 0 ? '' : tag + s.map(map).join(space))).join(` ${SEGMENT_BREAK} `);
  return [
    tag + doc.type,
    ...TEXT_FIELDS.map((f) => join(doc.fields[f], stem)),
    ...TEXT_FIELDS.map((f) => join(doc.fields[f], (w) => w)),
  ];
}
