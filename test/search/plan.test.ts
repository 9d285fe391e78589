import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  buildVectors,
  compileTsquery,
  fieldTsquery,
  pairHashes,
  rankPhrases,
  rankTsquery,
} from '../../src/search/compile-postgres.ts';
import {
  accountTag,
  compileMatch,
  DOCS_PER_ACCOUNT,
  filterMatch,
  ftsRow,
  MAX_ACCOUNT_SEQ,
  seqOfDoc,
  tierMatch,
} from '../../src/search/compile-sqlite.ts';
import { buildIndexDocument, distinctWords, vocabularyDelta } from '../../src/search/document.ts';
import { parseQuery } from '../../src/search/parser.ts';
import { buildPlan, type Plan, vocabularyPatterns } from '../../src/search/plan.ts';

const EXPANSIONS = new Map([
  ['*ance', ['finance', 'balance']],
  ['f*nce', ['finance']],
]);
const plan = (q: string) => buildPlan(parseQuery(q), EXPANSIONS);

/** Compact form of a plan, so the tables stay readable. */
function show(p: Plan): string {
  switch (p.kind) {
    case 'not':
      return `!${show(p.leaf)}`;
    case 'and':
    case 'or':
      return `(${p.kind} ${p.children.map(show).join(' ')})`;
    case 'stems':
      return `${p.fields.length === 3 ? '' : `${p.fields.join('|')}:`}${p.stems.join('_')}`;
    case 'prefix':
      return `${p.fields.length === 3 ? '' : `${p.fields.join('|')}:`}${p.prefix}*`;
    case 'words':
      return `${p.fields.length === 3 ? '' : `${p.fields.join('|')}:`}{${p.words.join(',')}}`;
    case 'type':
      return `type{${p.types.join(',')}}`;
  }
}

describe('buildPlan', () => {
  const cases: Array<[string, string | null]> = [
    ['running reports', '(and run report)'],
    ['"running reports"', 'run_report'],
    ['fin*', 'fin*'],
    ['*ance', '{finance,balance}'],
    ['*zzz', null],
    ['a OR *zzz', 'a'],
    ['a -*zzz', 'a'],
    ['a -type:memo', 'a'],
    ['a type:memo', null],
    ['type:note', 'type{note}'],
    ['type:*o*', 'type{document,note,record}'],
    ['type:"a b"', null],
    ['title:fin* author:smith', '(and title:fin* author:smith)'],
    ['a NOT (b OR c)', '(and a !b !c)'],
    ['a NOT (b c)', '(and a (or !b !c))'],
    ['a (b OR NOT c)', '(and a (or b !c))'],
    ['a NOT (b OR NOT c)', '(and a !b c)'],
    [`${'x'.repeat(129)} OR a`, 'a'],
  ];
  for (const [q, expected] of cases) {
    test(`${q.slice(0, 30)} -> ${expected}`, () => {
      const p = plan(q);
      assert.equal(p === null ? null : show(p), expected);
    });
  }

  test('only suffix and infix wildcards need the vocabulary', () => {
    assert.deepEqual(vocabularyPatterns(parseQuery('fin* *ance f*nce type:*ote -*x*')).sort(), [
      '*ance',
      '*x*',
      'f*nce',
    ]);
  });
});

describe('compilers', () => {
  const spill = (l: string) =>
    `('${l}' | ${Array.from({ length: 7 }, (_, i) => `'${l}~${i + 2}'`).join(' | ')})`;
  test('FTS5: NOT as a binary operator after a positive side', () => {
    assert.equal(
      compileMatch(plan('title:report (fin* OR *ance) -type:note')!, ''),
      '(((title : "report") AND (({title_x tags_x content_x} : "fin" *) OR ' +
        '({title_x tags_x content_x} : ("finance" OR "balance")))) NOT ((type : ("note"))))',
    );
  });

  test('tsquery: weights select fields, prefixed lexemes select metadata and exact words', () => {
    const p = plan('title:report "a b" author:smi* -type:note')!;
    assert.equal(
      compileTsquery(p),
      `(('report':A) & (${spill('a')} <-> ${spill('b')}) & 'author=smi':* & !('#note'))`,
      "on vector, a phrase's words also match their spill lexemes",
    );
    assert.equal(rankTsquery(p), "('report':A) | ('a' <-> 'b')", 'metadata and type do not rank');
    assert.equal(
      rankTsquery(plan('fin* *ance')!),
      "'fin':* | ('financ' | 'balanc')",
      'wildcards rank by stems',
    );
    assert.equal(rankTsquery(plan('type:note author:x')!), null);
    assert.equal(fieldTsquery(p, 'title'), "('report':A) | ('a':A <-> 'b':A)");
    assert.equal(fieldTsquery(p, 'tags'), "('a':B <-> 'b':B)");
    assert.equal(fieldTsquery(plan('author:x')!, 'title'), null);
  });

  test('tsquery: phrases over every free-text field are checked on rank first', () => {
    assert.deepEqual(rankPhrases(plan('"a b" title:c "d e" -f')!), {
      match: "(('a' & 'b') & ('c':A) & ('d' & 'e') & !('f'))",
      phrases: "('a' <-> 'b') & ('d' <-> 'e')",
      vectorPhrases: `(${spill('a')} <-> ${spill('b')}) & (${spill('d')} <-> ${spill('e')})`,
      gate: "(('a' <-> 'b') & ('d' <-> 'e')) | !'~' | '~a' | '~b' | '~d' | '~e'",
      pairs: [...pairHashes('a', 'b'), ...pairHashes('d', 'e')],
    });
    assert.deepEqual(rankPhrases(plan('"a b"')!), {
      match: "('a' & 'b')",
      phrases: "('a' <-> 'b')",
      vectorPhrases: `(${spill('a')} <-> ${spill('b')})`,
      gate: "(('a' <-> 'b')) | !'~' | '~a' | '~b'",
      pairs: [...pairHashes('a', 'b'), ...pairHashes('a', 'b')],
    });
    for (const q of ['a b', 'title:"a b"', 'author:"a b"', '"a b" OR c', '-"a b" c'])
      assert.equal(rankPhrases(plan(q)!), null, q);
  });
});

describe('index documents', () => {
  const row = {
    account_id: 'acc_1',
    id: 'dat_1',
    title: 'Running Reports',
    type: 'note',
    content: "It's the café's report",
    tags: JSON.stringify(['Q3 plan', 'ops']),
    metadata: JSON.stringify({ author: 'Ann', other: 'hidden', status: 7 }),
  };

  test('fold, split, stem; tags are separate segments; only indexed string metadata is kept', () => {
    const doc = buildIndexDocument(row);
    assert.deepEqual(doc.fields.tags, [['q3', 'plan'], ['ops']]);
    assert.deepEqual(doc.fields.author, [['ann']]);
    assert.deepEqual(doc.fields.status, []);
    assert.ok(!distinctWords(doc).includes('hidden'));
    const fts = ftsRow(doc, '');
    assert.equal(fts[1], 'run report');
    assert.equal(fts[2], 'q3 plan \u00b7 op');
    assert.equal(fts[8], 'q3 plan \u00b7 ops');
  });

  test("FTS5: every token of a row and of its account's queries starts with the account tag", () => {
    assert.equal(accountTag(1), '00001');
    assert.equal(accountTag(36), '00010');
    assert.match(accountTag(MAX_ACCOUNT_SEQ), /^[0-9a-z]{5}$/, 'fixed width up to the last seq');
    assert.equal(seqOfDoc(7 * DOCS_PER_ACCOUNT + 12), 7);
    const fts = ftsRow(buildIndexDocument(row), '0000a');
    assert.equal(fts[0], '0000anote');
    assert.equal(fts[1], '0000arun 0000areport');
    assert.equal(fts[2], '0000aq3 0000aplan \u00b7 0000aop', 'the tag break stays bare');
    assert.equal(
      compileMatch(plan('title:report "a b" fin* tag:x -type:note')!, '0000a'),
      '(((title : "0000areport") AND ({title tags content} : "0000aa 0000ab") AND ' +
        '({title_x tags_x content_x} : "0000afin" *) AND (tags : "0000ax")) NOT ((type : ("0000anote"))))',
    );
    assert.equal(filterMatch([{ kind: 'tag', value: 'Q3 plan' }], '0000a'), '(tags_x : "0000aq3 0000aplan")');
    assert.equal(tierMatch(plan('report')!, '0000a'), '({title tags} : "0000areport")');
  });

  test('the pair sketch grows with the text, and is left out where positions are clamped', () => {
    const sketch = (words: number) =>
      buildVectors(
        buildIndexDocument({ ...row, content: Array.from({ length: words }, (_, i) => `w${i}`).join(' ') }),
      ).pairs;
    assert.equal(sketch(3)?.length, 16, 'at least 128 bits');
    assert.equal(sketch(100)?.length, 128, '8 to 16 bits per pair');
    assert.equal(sketch(5000)?.length, 1024, 'at most 8192 bits');
    // Past position 16383 PostgreSQL stores every word at 16383, so `vector` may hold a phrase
    // whose words are not adjacent in the text; the sketch must not rule such a row out.
    assert.equal(sketch(16380), null);
  });

  test('past position 16381 a PostgreSQL vector stores words at 16383, never next to another', () => {
    const filler = Array.from({ length: 16_300 }, (_, i) => `f${i % 5000}`).join(' ');
    const content = `${filler} ${'gamma '.repeat(100)}${'zzz '.repeat(50)}delta`;
    const { vector } = buildVectors(buildIndexDocument({ ...row, content }));
    const positions = (lexeme: string) =>
      new RegExp(`'${lexeme}':([0-9A-D,]+)`)
        .exec(vector)![1]!
        .split(',')
        .map((p) => Number.parseInt(p, 10));
    const all = [...vector.matchAll(/':([0-9A-D,]+)/g)].flatMap((m) =>
      m[1]!.split(',').map((p) => Number.parseInt(p, 10)),
    );
    assert.ok(!all.includes(16_382), 'no word at 16382');
    assert.equal(Math.max(...all), 16_383);
    const gamma = positions('=gamma');
    assert.equal(gamma.at(-2), 16_381, 'the last word kept in place');
    assert.equal(gamma.at(-1), 16_383, 'the rest share the last position');
    assert.deepEqual(positions('=delta'), [16_383]);
    assert.deepEqual(positions('=zzz'), [16_383]);
  });

  test('vocabulary deltas count each word once, sorted', () => {
    assert.deepEqual(Object.fromEntries(vocabularyDelta(['a', 'b', 'c'], ['b', 'd'])), {
      a: -1,
      c: -1,
      d: 1,
    });
    assert.deepEqual(Object.fromEntries(vocabularyDelta([], [])), {});
  });

  test('a PostgreSQL rank vector keeps 8 positions per stem and marks the stems it cut', () => {
    const content = `${Array.from({ length: 9 }, () => 'report').join(' ')} plan`;
    const { vector, rank } = buildVectors(buildIndexDocument({ ...row, content }));
    assert.match(rank, /'report':2A(,\d+C){7} /, 'the title word and 7 of the 9 in the content');
    assert.ok(rank.endsWith(" '~' '~report'"), rank);
    assert.ok(!rank.includes("'~plan'") && !rank.includes("'~run'"), rank);
    assert.ok(!vector.includes('~'), 'the full vector has no marks');
    const short = buildVectors(buildIndexDocument({ ...row, content: 'plan' })).rank;
    assert.ok(short.endsWith(" '~'") && !short.includes("'~plan'"), short);
  });

  test("a PostgreSQL vector spills a stem's positions past 256 into `stem~2` ... `stem~8`", () => {
    const content = `${Array.from({ length: 2100 }, () => 'report').join(' ')} plan`;
    const { vector, rank } = buildVectors(buildIndexDocument({ ...row, content }));
    const lexemes = new Map(
      vector.split(' ').map((e) => {
        const at = e.lastIndexOf(':');
        return [e.slice(0, at), e.slice(at + 1).split(',')] as const;
      }),
    );
    // The title's `report` at 2, the content's 2,100 from position 13 on: 256 per lexeme, in order.
    assert.equal(lexemes.get("'report'")!.length, 256);
    assert.equal(lexemes.get("'report'")![0], '2A');
    for (let level = 2; level <= 8; level++) {
      const positions = lexemes.get(`'report~${level}'`);
      assert.ok(positions, `level ${level}`);
      assert.equal(positions.length, 256, `level ${level}`);
      assert.equal(positions[0], `${13 + (level - 1) * 256 - 1}C`, `level ${level}`);
    }
    assert.ok(!lexemes.has("'report~9'"), 'at most 8 levels: 2,048 positions');
    assert.ok(!lexemes.has("'plan~2'") && !lexemes.has("'=report~2'"), 'only stems past 256 spill');
    assert.equal(lexemes.get("'=report'")!.length, 256, 'exact words keep 256 positions');
    assert.ok(!rank.includes('report~'), 'rank keeps its own cut');
  });

  test('a PostgreSQL vector stays under its size limit however large the content', () => {
    const huge = Array.from({ length: 200_000 }, (_, i) => `w${i.toString(36)}x`).join(' ');
    const { vector, words } = buildVectors(buildIndexDocument({ ...row, content: huge }));
    assert.ok(Buffer.byteLength(vector) < 4_000_000);
    assert.ok(words.includes('w0x') && !words.includes(`w${(199_999).toString(36)}x`));
  });
});
