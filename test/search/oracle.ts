// A reference evaluator of the query language over in-memory objects: what the database answers
// must equal what this answers. It shares the tokenizer (document.ts) but none of the compilers.
import {
  buildIndexDocument,
  FREE_TEXT_FIELDS,
  type IndexDocument,
  type TextField,
} from '../../src/search/document.ts';
import type { QueryNode } from '../../src/search/parser.ts';
import { matchesWildcard, stemWord } from '../../src/search/text.ts';

export interface OracleObject {
  id: string;
  title: string;
  type: string;
  content: string;
  tags: string[];
  metadata: Record<string, string>;
}

/** Prepared objects for `evaluate`. */
export function prepare(objects: OracleObject[]): IndexDocument[] {
  return objects.map((o) =>
    buildIndexDocument({
      account_id: 'acc_oracle',
      id: o.id,
      title: o.title,
      type: o.type,
      content: o.content,
      tags: JSON.stringify(o.tags),
      metadata: JSON.stringify(o.metadata),
    }),
  );
}

function wordMatches(doc: IndexDocument, fields: readonly TextField[], test: (word: string) => boolean) {
  return fields.some((f) => doc.fields[f].some((segment) => segment.some(test)));
}

function phraseMatches(doc: IndexDocument, fields: readonly TextField[], stems: string[]) {
  return fields.some((f) =>
    doc.fields[f].some((segment) =>
      segment.some((_, start) =>
        stems.every((s, k) => segment[start + k] !== undefined && stemWord(segment[start + k]!) === s),
      ),
    ),
  );
}

/** True when the object matches the query. */
export function evaluate(doc: IndexDocument, node: QueryNode): boolean {
  switch (node.kind) {
    case 'and':
      return node.children.every((c) => evaluate(doc, c));
    case 'or':
      return node.children.some((c) => evaluate(doc, c));
    case 'not':
      return !evaluate(doc, node.child);
    case 'phrase':
      if (node.field === 'type') return false;
      return phraseMatches(doc, node.field ? [node.field] : FREE_TEXT_FIELDS, node.words.map(stemWord));
    case 'term': {
      if (node.field === 'type')
        return node.wildcard ? matchesWildcard(node.text, doc.type) : node.text === doc.type;
      const fields = node.field ? [node.field] : FREE_TEXT_FIELDS;
      if (node.wildcard) return wordMatches(doc, fields, (w) => matchesWildcard(node.text, w));
      const stem = stemWord(node.text);
      return wordMatches(doc, fields, (w) => stemWord(w) === stem);
    }
  }
}
