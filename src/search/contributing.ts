// Which terms of a query an object matched through (decisions §6: the excerpt highlights the
// matches, "or the title when only the title matched"). Every term not under a NOT is a candidate,
// but in `(alpha beta) OR gamma` an object found through `gamma` alone must not show `alpha` as a
// match: only the terms of the branches the object satisfies count. Evaluated in JS over the words
// the index keeps (document.ts), loosely as the database matches (a wildcard over every word it
// fits, not the 128 the database expands it to), on the first MAX_SCAN_CHARS of the content.
import { buildIndexDocument, cachedStemmer, type TextField } from './document.ts';
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
  const stem = cachedStemmer();
  const stemmed = new Map<TextField, string[][]>();
  const stemsOf = (field: TextField): string[][] => {
    let s = stemmed.get(field);
    if (!s) {
      s = doc.fields[field].map((segment) => segment.map(stem));
      stemmed.set(field, s);
    }
    return s;
  };
  const fieldsOf = (field: string | null): readonly TextField[] =>
    field === null ? FREE_TEXT : [field as TextField];

  const occurs = (leaf: QueryNode & { kind: 'term' | 'phrase' }): boolean => {
    if (leaf.field === 'type') {
      return (
        leaf.kind === 'term' &&
        (leaf.wildcard ? matchesWildcard(leaf.text, object.type) : leaf.text === object.type)
      );
    }
    const fields = fieldsOf(leaf.field);
    if (leaf.kind === 'phrase') {
      const want = leaf.words.map(stem);
      return fields.some((f) =>
        stemsOf(f).some((segment) => {
          for (let i = 0; i + want.length <= segment.length; i++) {
            let j = 0;
            while (j < want.length && segment[i + j] === want[j]) j++;
            if (j === want.length) return true;
          }
          return false;
        }),
      );
    }
    if (leaf.wildcard) {
      const test = wildcardTest(leaf.text);
      return fields.some((f) => doc.fields[f].some((segment) => segment.some(test)));
    }
    const want = stem(leaf.text);
    return fields.some((f) => stemsOf(f).some((segment) => segment.includes(want)));
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
