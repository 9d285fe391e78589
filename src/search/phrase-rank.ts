// BM25 of one phrase, computed in the service for a few matches (SQLite).
//
// FTS5's bm25() learns how many rows hold each query phrase by running that phrase over the table
// again (xQueryPhrase takes no rowid bound; the account tag on every token keeps it to the
// account's rows): for a phrase that means checking the positions of every row that holds all its
// words, on top of the same check the MATCH itself already made. Here the matches of the phrase
// (few, for nearly every phrase) are ranked from the same tokens each row was indexed with,
// exactly as FTS5 computes bm25: each row's weighted count of the phrase, its length, and the
// phrase's IDF from the number of matches, which is what bm25 counts. The order and the values are
// then bm25's, without the second pass.
import { type IndexDocument, TEXT_FIELDS, type TextField } from './document.ts';

/** FTS5's bm25 constants (fts5_aux.c). */
const K1 = 1.2;
const B = 0.75;

/** SQLite's variable-length integers (1-9 bytes, big-endian, 7 bits a byte and 8 in the ninth). */
export function readVarints(blob: Uint8Array): number[] {
  const out: number[] = [];
  let i = 0;
  while (i < blob.length) {
    let v = 0;
    let n = 0;
    for (;;) {
      const byte = blob[i++]!;
      if (n === 8) {
        v = v * 256 + byte;
        break;
      }
      v = v * 128 + (byte & 0x7f);
      n++;
      if ((byte & 0x80) === 0 || i >= blob.length) break;
    }
    out.push(v);
  }
  return out;
}

/**
 * How many times the phrase `stems` occurs in each of `fields` of the document, within one segment
 * (a tag) as FTS5 sees it: consecutive tokens of one column, never across the token between tags.
 */
export function phraseCounts(
  doc: IndexDocument,
  fields: readonly TextField[],
  stems: readonly string[],
  stem: (word: string) => string,
): Map<TextField, number> {
  const counts = new Map<TextField, number>();
  const first = stems[0]!;
  // Stemming keeps a word's first letter (test/search/phrase-rank.test.ts checks it), so most
  // words are ruled out without being stemmed.
  const initial = first.charCodeAt(0);
  for (const field of fields) {
    let n = 0;
    for (const segment of doc.fields[field]) {
      for (let i = 0; i + stems.length <= segment.length; i++) {
        const word = segment[i]!;
        if (word.charCodeAt(0) !== initial || stem(word) !== first) continue;
        let j = 1;
        while (j < stems.length && stem(segment[i + j]!) === stems[j]) j++;
        if (j === stems.length) n++;
      }
    }
    if (n > 0) counts.set(field, n);
  }
  return counts;
}

/**
 * The value of FTS5's `bm25(search_fts, weights…)` for a row and a query of this one phrase, with
 * `idf` given (negated, as bm25 returns it): `counts` from phraseCounts, `weight` per field (the
 * stem column's), `tokens` the row's total token count (FTS5's docsize), `avgTokens` the table's.
 */
export function phraseBm25(
  counts: ReadonlyMap<TextField, number>,
  weight: (field: TextField) => number,
  tokens: number,
  avgTokens: number,
  idf: number,
): number {
  let f = 0;
  for (const field of TEXT_FIELDS) f += weight(field) * (counts.get(field) ?? 0);
  return -idf * ((f * (K1 + 1)) / (f + K1 * (1 - B + (B * tokens) / avgTokens)));
}

/** FTS5's IDF for a phrase found in `hits` of `rows` rows (never below 1e-6). */
export function phraseIdf(rows: number, hits: number): number {
  const idf = Math.log((rows - hits + 0.5) / (hits + 0.5));
  return idf <= 0 ? 1e-6 : idf;
}
