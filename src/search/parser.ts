// The `q` language of decisions §6, parsed into a small AST that each dialect compiles.
// The parser is lenient (unbalanced quotes/parentheses are closed, dangling operators dropped) and
// throws only QueryError. Work is bounded: 1,000 characters, 64 terms, 32 nested groups.
import { foldText, splitPatternWords, splitWords } from './text.ts';

export { foldText } from './text.ts';

export type SearchField = 'title' | 'content' | 'tags' | 'type' | 'author' | 'status' | 'description';

/**
 * Query AST. Texts are folded (lower case, no accents) but not stemmed: the database stems.
 * A `term` text contains `*` only when `wildcard` is true (never two in a row, never only stars);
 * a `phrase` has at least two words and no `*`. `and`/`or` have at least two children and are
 * flattened (no `and` directly inside an `and`). `not` never wraps another `not`; `position` is the
 * 1-based character offset of its `NOT` or `-`.
 */
export type QueryNode =
  | { kind: 'term'; field: SearchField | null; text: string; wildcard: boolean }
  | { kind: 'phrase'; field: SearchField | null; words: string[] }
  | { kind: 'and'; children: QueryNode[] }
  | { kind: 'or'; children: QueryNode[] }
  | { kind: 'not'; child: QueryNode; position: number };

/** A non-negated term (`text`) or phrase (`words`), as used for highlighting. */
export interface PositiveTerm {
  field: SearchField | null;
  text?: string;
  words?: string[];
  wildcard: boolean;
}

/** An invalid query; `position` is the 1-based character offset of the culprit when known. */
export class QueryError extends Error {
  override readonly name = 'QueryError';
  readonly position: number | undefined;

  constructor(message: string, position?: number) {
    super(message);
    this.position = position;
  }
}

export const MAX_QUERY_CHARS = 1000;
export const MAX_TERMS = 64;
export const MAX_DEPTH = 32;

const FIELDS: ReadonlyMap<string, SearchField> = new Map<string, SearchField>([
  ['title', 'title'],
  ['content', 'content'],
  ['tag', 'tags'],
  ['tags', 'tags'],
  ['type', 'type'],
  ['author', 'author'],
  ['status', 'status'],
  ['description', 'description'],
]);

const FIELD_PREFIX = /^([A-Za-z]+):/;
const SPACE = /^\s$/u;

type Token =
  | { t: 'lparen'; pos: number; field: SearchField | null }
  | { t: 'rparen' | 'and' | 'or' | 'not' | 'neg'; pos: number }
  | { t: 'text'; pos: number; field: SearchField | null; raw: string; quoted: boolean };

/** Splits the query into tokens; positions are 1-based code-point offsets from `base`. */
function tokenize(chars: string[], base: number): Token[] {
  const tokens: Token[] = [];
  const n = chars.length;
  const isSpace = (c: string | undefined) => c !== undefined && SPACE.test(c);
  let i = 0;
  let afterNeg = false;
  const readQuoted = (field: SearchField | null, pos: number) => {
    // chars[i] is the opening quote; a missing closing quote is implied at the end.
    let j = i + 1;
    while (j < n && chars[j] !== '"') j++;
    tokens.push({ t: 'text', pos, field, raw: chars.slice(i + 1, j).join(''), quoted: true });
    i = j + 1;
  };
  while (i < n) {
    const c = chars[i]!;
    const pos = base + i + 1;
    const wasNeg = afterNeg;
    afterNeg = false;
    if (isSpace(c)) {
      i++;
    } else if (c === '(') {
      tokens.push({ t: 'lparen', pos, field: null });
      i++;
    } else if (c === ')') {
      tokens.push({ t: 'rparen', pos });
      i++;
    } else if (c === '"') {
      readQuoted(null, pos);
    } else if (c === '-' && i + 1 < n && !isSpace(chars[i + 1]) && chars[i + 1] !== ')') {
      tokens.push({ t: 'neg', pos });
      afterNeg = true;
      i++;
    } else {
      let j = i;
      while (j < n && !isSpace(chars[j]) && chars[j] !== '(' && chars[j] !== ')' && chars[j] !== '"') j++;
      const word = chars.slice(i, j).join('');
      const next = chars[j];
      i = j;
      const m = FIELD_PREFIX.exec(word);
      const field = m ? FIELDS.get(m[1]!.toLowerCase()) : undefined;
      if (!wasNeg && (word === 'AND' || word === 'OR' || word === 'NOT')) {
        tokens.push({ t: word === 'AND' ? 'and' : word === 'OR' ? 'or' : 'not', pos });
      } else if (field && (word.length > m![0].length || next === '"' || next === '(')) {
        let rest = word.slice(m![0].length);
        // `title:-x` (and `title:-"a b"`, `title:-(a b)`) is `-title:x`, not `title:x`.
        if (rest.startsWith('-') && (rest.length > 1 || next === '"' || next === '(')) {
          tokens.push({ t: 'neg', pos: pos + m![0].length });
          rest = rest.slice(1);
        }
        if (rest.length > 0) {
          tokens.push({ t: 'text', pos, field, raw: rest, quoted: false });
        } else if (next === '"') {
          readQuoted(field, pos);
        } else {
          tokens.push({ t: 'lparen', pos, field });
          i++;
        }
      } else {
        // Unknown `word:` prefixes, and a bare `title:`, are ordinary text.
        tokens.push({ t: 'text', pos, field: null, raw: word, quoted: false });
      }
    }
  }
  return tokens;
}

class Parser {
  private at = 0;
  private terms = 0;

  constructor(private readonly tokens: Token[]) {}

  /** The whole query; at depth 0 parseAnd skips stray `)`, so every token is consumed. */
  parse(): QueryNode | null {
    return this.parseOr(0, null);
  }

  private peek(): Token | undefined {
    return this.tokens[this.at];
  }

  private parseOr(depth: number, field: SearchField | null): QueryNode | null {
    const children: QueryNode[] = [];
    for (;;) {
      const node = this.parseAnd(depth, field);
      if (node) children.push(node);
      // An `OR` with nothing on one side is dangling and simply ignored.
      if (this.peek()?.t !== 'or') break;
      this.at++;
    }
    return combine('or', children);
  }

  private parseAnd(depth: number, field: SearchField | null): QueryNode | null {
    const children: QueryNode[] = [];
    for (let tok = this.peek(); tok; tok = this.peek()) {
      if (tok.t === 'or') break;
      if (tok.t === 'rparen') {
        if (depth > 0) break;
        this.at++; // a stray `)` is ignored
        continue;
      }
      if (tok.t === 'and') {
        this.at++; // explicit AND is the implicit one; a dangling AND is ignored
        continue;
      }
      const node = this.parseUnary(depth, field);
      if (node) children.push(node);
    }
    return combine('and', children);
  }

  private parseUnary(depth: number, field: SearchField | null): QueryNode | null {
    const negations: number[] = [];
    for (let tok = this.peek(); tok && (tok.t === 'not' || tok.t === 'neg'); tok = this.peek()) {
      negations.push(tok.pos);
      this.at++;
    }
    const tok = this.peek();
    // A NOT followed by nothing it can apply to is dangling: drop it.
    if (!tok || (tok.t !== 'text' && tok.t !== 'lparen')) return null;
    let node = this.parsePrimary(tok, depth, field);
    if (!node) return null;
    for (let k = negations.length - 1; k >= 0; k--) {
      node = node.kind === 'not' ? node.child : { kind: 'not', child: node, position: negations[k]! };
    }
    return node;
  }

  private parsePrimary(
    tok: Token & { t: 'text' | 'lparen' },
    depth: number,
    field: SearchField | null,
  ): QueryNode | null {
    this.at++;
    if (tok.t === 'text') return this.leaf(tok, tok.field ?? field);
    if (depth >= MAX_DEPTH) {
      throw new QueryError(`query nests parentheses deeper than ${MAX_DEPTH} levels`, tok.pos);
    }
    const inner = this.parseOr(depth + 1, tok.field ?? field);
    if (this.peek()?.t === 'rparen') this.at++; // a missing `)` is implied at the end
    return inner;
  }

  /** Turns one text token into a term, a phrase, an AND of wildcard terms, or nothing. */
  private leaf(tok: Token & { t: 'text' }, field: SearchField | null): QueryNode | null {
    const folded = foldText(tok.raw);
    const words = tok.quoted ? splitWords(folded) : splitPatternWords(folded);
    if (words.length === 0) return null;
    const count = (node: QueryNode): QueryNode => {
      if (++this.terms > MAX_TERMS) {
        throw new QueryError(`query has more than ${MAX_TERMS} terms`, tok.pos);
      }
      return node;
    };
    const term = (text: string): QueryNode =>
      count({ kind: 'term', field, text, wildcard: text.includes('*') });
    if (words.length === 1) return term(words[0]!);
    // `e-mail` is the phrase "e mail"; with a wildcard (`e-mail*`) adjacency cannot be expressed
    // next to a pattern, so its words are ANDed instead.
    if (words.some((w) => w.includes('*'))) return combine('and', words.map(term));
    return count({ kind: 'phrase', field, words });
  }
}

/** Builds an and/or node, flattening same-kind children and unwrapping a single child. */
function combine(kind: 'and' | 'or', children: QueryNode[]): QueryNode | null {
  const flat: QueryNode[] = [];
  for (const child of children) {
    if (child.kind === kind) flat.push(...child.children);
    else flat.push(child);
  }
  if (flat.length === 0) return null;
  if (flat.length === 1) return flat[0]!;
  return { kind, children: flat };
}

/** True when the node can match on its own: it requires at least one non-negated term. */
export function isPositive(node: QueryNode): boolean {
  switch (node.kind) {
    case 'term':
    case 'phrase':
      return true;
    case 'not':
      return false;
    case 'and':
      return node.children.some(isPositive);
    case 'or':
      return node.children.every(isPositive);
  }
}

/** Position of the NOT that makes a non-positive node non-positive. */
function offendingPosition(node: QueryNode): number | undefined {
  switch (node.kind) {
    case 'not':
      return node.position;
    case 'and':
    case 'or': {
      const culprit = node.children.find((c) => !isPositive(c));
      return culprit ? offendingPosition(culprit) : undefined;
    }
    default:
      return undefined;
  }
}

/** Parses `q` (decisions §6) into an AST; throws QueryError, and nothing else, when it is invalid. */
export function parseQuery(q: string): QueryNode {
  if (typeof q !== 'string') throw new QueryError('query must be a string');
  const trimmed = q.trim();
  // Code units bound the work before counting code points (at most 2 units per code point).
  if (trimmed.length > 2 * MAX_QUERY_CHARS) {
    throw new QueryError(`query is longer than ${MAX_QUERY_CHARS} characters`);
  }
  const chars = Array.from(trimmed);
  if (chars.length > MAX_QUERY_CHARS) {
    throw new QueryError(`query is longer than ${MAX_QUERY_CHARS} characters`);
  }
  // Leading whitespace is all BMP, so its code-unit length is its length in characters.
  const base = q.length - q.trimStart().length;
  const node = new Parser(tokenize(chars, base)).parse();
  if (!node) throw new QueryError('query has no searchable term');
  if (!isPositive(node)) {
    throw new QueryError(
      'query has no positive term (NOT needs something to subtract from)',
      offendingPosition(node),
    );
  }
  return node;
}

/**
 * The terms and phrases of `node` that are not under a NOT, in query order; of an OR, only those of
 * the alternatives `alternative` keeps (all by default).
 */
export function positiveTerms(
  node: QueryNode,
  alternative: (child: QueryNode) => boolean = () => true,
): PositiveTerm[] {
  const out: PositiveTerm[] = [];
  const visit = (n: QueryNode): void => {
    switch (n.kind) {
      case 'term':
        out.push({ field: n.field, text: n.text, wildcard: n.wildcard });
        return;
      case 'phrase':
        out.push({ field: n.field, words: [...n.words], wildcard: false });
        return;
      case 'and':
        for (const c of n.children) visit(c);
        return;
      case 'or':
        for (const c of n.children) if (alternative(c)) visit(c);
        return;
      case 'not':
        return;
    }
  };
  visit(node);
  return out;
}
