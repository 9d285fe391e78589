// The query AST resolved against the index: words stemmed, wildcards turned into prefix matches or
// vocabulary expansions, `type:` checked against its closed set, NOTs pushed down to the leaves,
// and leaves that can never match folded away. Both dialect compilers start from this plan.
import { DATA_TYPES, FREE_TEXT_FIELDS, isIndexable, type TextField } from './document.ts';
import type { QueryNode, SearchField } from './parser.ts';
import { matchesWildcard, stemWord } from './text.ts';

/** One index lookup; `stems` of length > 1 is a phrase. */
export type Leaf =
  | { kind: 'stems'; fields: readonly TextField[]; stems: string[] }
  | { kind: 'prefix'; fields: readonly TextField[]; prefix: string }
  | { kind: 'words'; fields: readonly TextField[]; words: string[] }
  | { kind: 'type'; types: string[] };

/** Negation normal form: `not` wraps leaves only; `and`/`or` have two or more children, flattened. */
export type Plan =
  | Leaf
  | { kind: 'not'; leaf: Leaf }
  | { kind: 'and'; children: Plan[] }
  | { kind: 'or'; children: Plan[] };

/** True for a wildcard that the FTS index answers directly: one `*`, at the end (`fin*`). */
export function isPrefixPattern(pattern: string): boolean {
  return pattern.indexOf('*') === pattern.length - 1;
}

/** The wildcard patterns of `node` that must be expanded through the account's vocabulary. */
export function vocabularyPatterns(node: QueryNode): string[] {
  const out = new Set<string>();
  const visit = (n: QueryNode): void => {
    if (n.kind === 'term') {
      if (n.wildcard && n.field !== 'type' && !isPrefixPattern(n.text)) out.add(n.text);
    } else if (n.kind === 'not') visit(n.child);
    else if (n.kind === 'and' || n.kind === 'or') n.children.forEach(visit);
  };
  visit(node);
  return [...out];
}

/** Words longer than the index keeps can never match (and would overflow a PostgreSQL lexeme). */
const indexable = isIndexable;

const fieldsOf = (field: SearchField | null): readonly TextField[] =>
  field === null ? FREE_TEXT_FIELDS : [field as TextField];

/** A leaf for a term or phrase, or false when it can match nothing. */
function toLeaf(
  node: QueryNode & { kind: 'term' | 'phrase' },
  expansions: ReadonlyMap<string, readonly string[]>,
): Leaf | false {
  if (node.field === 'type') {
    // Type values are single words from a closed set, matched exactly (no stemming).
    if (node.kind === 'phrase') return false;
    const types = DATA_TYPES.filter((t) => (node.wildcard ? matchesWildcard(node.text, t) : node.text === t));
    return types.length > 0 ? { kind: 'type', types } : false;
  }
  const fields = fieldsOf(node.field);
  if (node.kind === 'phrase') {
    return node.words.every(indexable) ? { kind: 'stems', fields, stems: node.words.map(stemWord) } : false;
  }
  if (!node.wildcard)
    return indexable(node.text) ? { kind: 'stems', fields, stems: [stemWord(node.text)] } : false;
  if (isPrefixPattern(node.text)) {
    const prefix = node.text.slice(0, -1);
    return indexable(prefix) ? { kind: 'prefix', fields, prefix } : false;
  }
  const words = expansions.get(node.text) ?? [];
  return words.length > 0 ? { kind: 'words', fields, words: [...words] } : false;
}

type Folded = Plan | boolean;

function combine(kind: 'and' | 'or', parts: Folded[]): Folded {
  // `absorbing` decides the whole node (false in an AND); `neutral` drops out (true in an AND).
  const absorbing = kind === 'or';
  const children: Plan[] = [];
  for (const p of parts) {
    if (typeof p === 'boolean') {
      if (p === absorbing) return absorbing;
      continue;
    }
    if (p.kind === kind) children.push(...p.children);
    else children.push(p);
  }
  if (children.length === 0) return !absorbing;
  if (children.length === 1) return children[0]!;
  return { kind, children };
}

function build(
  node: QueryNode,
  negated: boolean,
  expansions: ReadonlyMap<string, readonly string[]>,
): Folded {
  switch (node.kind) {
    case 'term':
    case 'phrase': {
      const leaf = toLeaf(node, expansions);
      if (leaf === false) return negated;
      return negated ? { kind: 'not', leaf } : leaf;
    }
    case 'not':
      return build(node.child, !negated, expansions);
    case 'and':
    case 'or': {
      // De Morgan: a negated AND is an OR of negations, and the other way round.
      const kind = (node.kind === 'and') !== negated ? 'and' : 'or';
      return combine(
        kind,
        node.children.map((c) => build(c, negated, expansions)),
      );
    }
  }
}

/**
 * Resolves a parsed query (which the parser guarantees has a positive term) into a plan, or null
 * when it can match nothing (`type:foo`, a wildcard with no expansion).
 */
export function buildPlan(node: QueryNode, expansions: ReadonlyMap<string, readonly string[]>): Plan | null {
  const plan = build(node, false, expansions);
  if (plan === false) return null;
  // A positive query never folds to "everything": each positive leaf is a lookup or false.
  if (plan === true || !isPositivePlan(plan)) throw new Error('search plan has no positive term');
  return plan;
}

/** True when the plan requires at least one lookup to match (it can stand on the left of a NOT). */
export function isPositivePlan(plan: Plan): boolean {
  switch (plan.kind) {
    case 'not':
      return false;
    case 'and':
      return plan.children.some(isPositivePlan);
    case 'or':
      return plan.children.every(isPositivePlan);
    default:
      return true;
  }
}

/** The logical complement of a plan, still in negation normal form. */
export function negatePlan(plan: Plan): Plan {
  switch (plan.kind) {
    case 'not':
      return plan.leaf;
    case 'and':
      return { kind: 'or', children: plan.children.map(negatePlan) };
    case 'or':
      return { kind: 'and', children: plan.children.map(negatePlan) };
    default:
      return { kind: 'not', leaf: plan };
  }
}

/** The leaves that count towards a match (not under a NOT), for ranking. */
export function positiveLeaves(plan: Plan): Leaf[] {
  switch (plan.kind) {
    case 'not':
      return [];
    case 'and':
    case 'or':
      return plan.children.flatMap(positiveLeaves);
    default:
      return [plan];
  }
}
