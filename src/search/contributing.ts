// Which terms of a query an object matched through (decisions §6: the excerpt highlights the
// matches, "or the title when only the title matched"). Every term not under a NOT is a candidate,
// but in `(alpha beta) OR gamma` an object found through `gamma` alone must not show `alpha` as a
// match: only the terms of the branches the object satisfies count. Evaluated in JS over the words
// the index keeps (document.ts), loosely as the database matches (a wildcard over every word it
// fits, not the 128 the database expands it to), on the first MAX_SCAN_CHARS of the content.
import { buildIndexDocument, sharedStem, type TextField } from './document.ts';
import { MAX_SCAN_CHARS } from './excerpt.ts';
import { type PositiveTerm, positiveTerms, type QueryNode } from './parser.ts';
import { matchesWildcard, wildcardTest } from './text.ts';

/** What the evaluation reads of an object. */
export interface ObjectText {
  title: string;
  type: string;
  content: string;
  /** JSON as stored. */
  tags: string;
  metadata: string;
}

const FREE_TEXT: readonly TextField[] = ['title', 'tags', 'content'];

/** Whether `node` holds an OR: only then can a positive term belong to a branch left unsatisfied. */
export function hasAlternatives(node: QueryNode): boolean {
  switch (node.kind) {
    case 'or':
      return true;
    case 'and':
      return node.children.some(hasAlternatives);
    case 'not':
      return hasAlternatives(node.child);
    default:
      return false;
  }
}

/**
 * The positive terms of the branches of `node` that `object` satisfies, in query order; null when
 * the evaluation finds no branch satisfied (it cannot tell what the database matched through: the
 * caller then highlights every positive term).
 */
export function contributingTerms(node: QueryNode, object: ObjectText): PositiveTerm[] | null {
  const doc = buildIndexDocument({
    account_id: '',
    id: '',
    title: object.title,
    type: object.type,
    content:
      object.content.length > MAX_SCAN_CHARS ? object.content.slice(0, MAX_SCAN_CHARS) : object.content,
    tags: object.tags,
    metadata: object.metadata,
  });
  const fieldsOf = (field: string | null): readonly TextField[] =>
    field === null ? FREE_TEXT : [field as TextField];
  // A word matches a query word with the same stem. Porter only rewrites endings, so a word and
  // its stem share their first character: testing it first skips stemming most words of a text
  // (excerpt.ts does the same).
  const sameStem = (target: string) => {
    const want = sharedStem(target);
    return (w: string) => w === target || (w[0] === want[0] && sharedStem(w) === want);
  };
  const inFields = (leaf: { field: string | null }, found: (segment: string[]) => boolean) =>
    fieldsOf(leaf.field).some((f) => doc.fields[f].some(found));

  const occurs = (leaf: QueryNode & { kind: 'term' | 'phrase' }): boolean => {
    if (leaf.field === 'type') {
      return (
        leaf.kind === 'term' &&
        (leaf.wildcard ? matchesWildcard(leaf.text, object.type) : leaf.text === object.type)
      );
    }
    if (leaf.kind === 'phrase') {
      const tests = leaf.words.map(sameStem);
      return inFields(leaf, (segment) => {
        for (let i = 0; i + tests.length <= segment.length; i++) {
          if (tests.every((t, j) => t(segment[i + j]!))) return true;
        }
        return false;
      });
    }
    const test = leaf.wildcard ? wildcardTest(leaf.text) : sameStem(leaf.text);
    return inFields(leaf, (segment) => segment.some(test));
  };

  const satisfied = new Map<QueryNode, boolean>();
  const sat = (n: QueryNode): boolean => {
    let s = satisfied.get(n);
    if (s === undefined) {
      switch (n.kind) {
        case 'term':
        case 'phrase':
          s = occurs(n);
          break;
        case 'and':
          s = n.children.every(sat);
          break;
        case 'or':
          s = n.children.some(sat);
          break;
        case 'not':
          s = !sat(n.child);
          break;
      }
      satisfied.set(n, s);
    }
    return s;
  };
  if (!sat(node)) return null;

  // An AND that holds holds through every child; an OR through the alternatives that hold.
  return positiveTerms(node, sat);
}
