// Issue 10, point 3: the `q` language fuzzed end to end. Structure-aware generators (operators,
// quotes, parentheses, wildcards, field prefixes, unicode, very long tokens, the length, term and
// depth limits) and mutations of them, through parse -> plan -> both SQL compilers -> excerpt.
// The only exception allowed is QueryError (answered 400 invalid_query). A sample also goes through
// GET /v1/search on each database: no 5xx, a parser rejection is a 400. test/search/parser.test.ts
// holds the AST-shape properties; this file is about volume. Long form: 1,000,000 inputs.
import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import fc from 'fast-check';
import { compileTsquery, fieldTsquery, rankTsquery } from '../../src/search/compile-postgres.ts';
import { accountTag, compileMatch } from '../../src/search/compile-sqlite.ts';
import { buildExcerpt } from '../../src/search/excerpt.ts';
import { parseQuery, positiveTerms, QueryError, type QueryNode } from '../../src/search/parser.ts';
import { buildPlan, vocabularyPatterns } from '../../src/search/plan.ts';
import { MAX_EXPANDED_PATTERNS } from '../../src/search/search-index.ts';
import { describeEachDatabase, type TestAccount } from '../helpers/harness.ts';

const LONG = process.env.ADS_RELIABILITY_LONG === '1';
const INPUTS = Number(process.env.ADS_FUZZ_PARSER_RUNS ?? (LONG ? 1_000_000 : 20_000));
const HTTP_INPUTS = Number(process.env.ADS_FUZZ_PARSER_HTTP_RUNS ?? (LONG ? 10_000 : 300));
const SEED = Number(process.env.ADS_FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));

const VOCAB = ['finance', 'report', 'alpha', 'café', 'naïve', 'q3', 'e-mail', 'über', 'straße', 'a', 'x'];
const UNICODE = [
  'é',
  'E\u0301',
  'İ',
  'ı',
  'ß',
  'ﬁ',
  '½',
  '㎒',
  'Ω',
  '日本語',
  'مرحبا',
  '\u202e',
  '\u200d',
  '\u200b',
  '\ufeff',
  '😀',
  '👩‍👩‍👧',
  '🇫🇷',
  '\ud800',
  '\udfff',
  '\u0000',
  '\u0301\u0301\u0301',
  'Ａ',
  '\u00a0',
  '\u3000',
  '\u2028',
];
const FIELDS = [
  'title:',
  'TITLE:',
  'content:',
  'tag:',
  'tags:',
  'Tags:',
  'type:',
  'author:',
  'status:',
  'description:',
  'foo:',
  'metadata.x:',
  ':',
  'title::',
  'http:',
];
const SEPARATORS = [
  ' ',
  ' ',
  ' ',
  '  ',
  '\t',
  '\n',
  ' AND ',
  ' OR ',
  ' and ',
  ' or ',
  ' NOT ',
  ' AND NOT ',
  '',
];

const plainWord = fc.oneof(
  fc.constantFrom(...VOCAB),
  fc.constantFrom('AND', 'OR', 'NOT', 'and', '-', '*', '**', '"', '(', ')', ':'),
  fc.string({
    unit: fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz0123456789'),
    minLength: 1,
    maxLength: 12,
  }),
  fc.array(fc.constantFrom(...UNICODE, 'a', 'b'), { minLength: 1, maxLength: 6 }).map((a) => a.join('')),
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 8 }),
);
/** A word with `*` anywhere: prefix, suffix, inner, several, only stars. */
const wildcard = fc
  .tuple(plainWord, fc.nat({ max: 20 }), fc.constantFrom('*', '**', '***'))
  .map(([w, at, star]) => {
    const i = at % (w.length + 1);
    return `${w.slice(0, i)}${star}${w.slice(i)}`;
  });
const longToken = fc.oneof(
  fc.integer({ min: 60, max: 2_100 }).map((n) => 'a'.repeat(n)),
  fc.integer({ min: 120, max: 140 }).map((n) => `${'b'.repeat(n)}*`),
  fc.integer({ min: 100, max: 1_100 }).map((n) => '😀'.repeat(n)),
  fc.integer({ min: 100, max: 600 }).map((n) => 'e\u0301'.repeat(n)),
);
const phrase = fc
  .tuple(fc.array(fc.oneof(plainWord, wildcard), { minLength: 0, maxLength: 5 }), fc.boolean())
  .map(([words, closed]) => `"${words.join(' ')}${closed ? '"' : ''}`);

const { query } = fc.letrec<{ query: string; term: string; seq: string; group: string; unary: string }>(
  (tie) => ({
    query: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      tie('term'),
      tie('seq'),
      tie('group'),
      tie('unary'),
    ),
    term: fc.oneof(
      { weight: 6, arbitrary: plainWord },
      { weight: 3, arbitrary: wildcard },
      { weight: 3, arbitrary: phrase },
      {
        weight: 3,
        arbitrary: fc
          .tuple(fc.constantFrom(...FIELDS), fc.oneof(plainWord, wildcard, phrase, fc.constant('')))
          .map(([f, v]) => f + v),
      },
      { weight: 1, arbitrary: longToken },
    ),
    seq: fc
      .array(fc.tuple(tie('query'), fc.constantFrom(...SEPARATORS)), { minLength: 2, maxLength: 5 })
      .map((parts) => parts.map(([q, s]) => q + s).join('')),
    group: fc
      .tuple(fc.constantFrom('', ...FIELDS.slice(0, 5)), tie('query'), fc.constantFrom(')', ')', '', '))'))
      .map(([f, q, close]) => `${f}(${q}${close}`),
    unary: fc
      .tuple(fc.constantFrom('NOT ', '-', 'NOT NOT ', '--', '- ', 'NOT -', '-NOT '), tie('query'))
      .map(([op, q]) => op + q),
  }),
);

/** The limits: length (code points and units), term count, nesting depth, around their edges. */
const limits = fc.oneof(
  fc.integer({ min: 990, max: 1_010 }).map((n) => 'a'.repeat(n)),
  fc.integer({ min: 495, max: 505 }).map((n) => 'a '.repeat(n)),
  fc.integer({ min: 995, max: 1_005 }).map((n) => `${' '.repeat(50)}${'😀'.repeat(n)}${' '.repeat(50)}`),
  fc.integer({ min: 60, max: 70 }).map((n) => Array.from({ length: n }, (_, i) => `w${i}`).join(' ')),
  fc.integer({ min: 60, max: 70 }).map((n) => Array.from({ length: n }, (_, i) => `w${i}*`).join(' OR ')),
  fc.integer({ min: 28, max: 40 }).map((n) => `${'('.repeat(n)}a${')'.repeat(n)}`),
  fc.integer({ min: 28, max: 300 }).map((n) => `${'('.repeat(n)}a`),
  fc.integer({ min: 1, max: 500 }).map((n) => `${'NOT '.repeat(n)}a`),
  fc.integer({ min: 1, max: 500 }).map((n) => `a ${'-'.repeat(n)}b`),
  fc.integer({ min: 1, max: 300 }).map((n) => `a ${'"'.repeat(n)} b`),
  fc.integer({ min: 1, max: 300 }).map((n) => `${'title:'.repeat(n)}x`),
  fc.integer({ min: 1, max: 40 }).map((n) => Array.from({ length: n }, (_, i) => `*x${i}*`).join(' ')),
);

/** A generated query with random edits: inserted, deleted and duplicated slices. */
const mutated = fc
  .tuple(
    query,
    fc.array(
      fc.tuple(
        fc.nat(),
        fc.nat({ max: 8 }),
        fc.oneof(fc.constantFrom(...UNICODE, '(', ')', '"', '*', '-', ':', ' '), plainWord),
      ),
      { minLength: 1, maxLength: 4 },
    ),
  )
  .map(([q, edits]) => {
    let s = q;
    for (const [at, len, insert] of edits) {
      const i = at % (s.length + 1);
      s =
        at % 3 === 0
          ? s.slice(0, i) + s.slice(i + len)
          : at % 3 === 1
            ? s.slice(0, i) + insert + s.slice(i)
            : s + s.slice(i, i + len);
    }
    return s;
  });

const random = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 200 }),
  fc.string({ unit: 'grapheme', maxLength: 100 }),
  fc.string({ unit: 'binary-ascii', maxLength: 200 }),
);

export const fuzzQuery = fc.oneof(
  { weight: 10, arbitrary: query },
  { weight: 4, arbitrary: mutated },
  { weight: 2, arbitrary: limits },
  { weight: 2, arbitrary: random },
);

const CONTENT =
  'Finance report for Q3: café naïve über straße e-mail alpha <b>bold</b> & "quotes" ' +
  '😀 日本語 '.repeat(3) +
  'a '.repeat(50);

interface Outcome {
  accepted: boolean;
  /** A thrown value other than QueryError, anywhere in the pipeline. */
  uncaught?: string;
}

/** The whole pure pipeline a search runs: parse, plan (with made-up expansions), compile, excerpt. */
function runPipeline(q: string, n: number): Outcome {
  let node: QueryNode;
  try {
    node = parseQuery(q);
  } catch (err) {
    if (err instanceof QueryError) return { accepted: false };
    return { accepted: false, uncaught: `parseQuery threw ${String(err)}` };
  }
  try {
    // Expansions as the vocabulary lookup could return them: none, one word, several.
    const expansions = new Map(
      vocabularyPatterns(node).map((p, i) => [
        p,
        (n + i) % 3 === 0 ? [] : [p.replace(/\*/g, ''), p.replace(/\*/g, 'x')].filter(Boolean),
      ]),
    );
    const plan = buildPlan(node, expansions);
    if (plan) {
      compileMatch(plan, accountTag(1));
      compileTsquery(plan);
      rankTsquery(plan);
      fieldTsquery(plan, 'title');
      fieldTsquery(plan, 'tags');
    }
    buildExcerpt(CONTENT, positiveTerms(node));
    return { accepted: true };
  } catch (err) {
    return {
      accepted: true,
      uncaught: `after parsing: ${String((err as Error)?.stack ?? err).slice(0, 300)}`,
    };
  }
}

it(`query pipeline: ${INPUTS.toLocaleString('en')} generated queries, only QueryError is thrown`, (t) => {
  let inputs = 0;
  let rejected = 0;
  let uncaught = 0;
  const examples: string[] = [];
  const started = Date.now();
  fc.assert(
    fc.property(fuzzQuery, (q) => {
      inputs++;
      const out = runPipeline(q, inputs);
      if (!out.accepted) rejected++;
      if (out.uncaught) {
        uncaught++;
        if (examples.length < 10) examples.push(`${JSON.stringify(q).slice(0, 300)}: ${out.uncaught}`);
      }
    }),
    { numRuns: INPUTS, seed: SEED },
  );
  t.diagnostic(
    `seed ${SEED}: ${inputs} queries in ${((Date.now() - started) / 1000).toFixed(1)} s; ` +
      `rejected with QueryError ${rejected}; uncaught exceptions ${uncaught}`,
  );
  assert.equal(uncaught, 0, `uncaught exceptions (seed ${SEED}):\n  ${examples.join('\n  ')}`);
  // The generators must produce both outcomes in quantity, or they prove little.
  assert.ok(rejected > INPUTS / 50 && inputs - rejected > INPUTS / 5, `rejected ${rejected} of ${inputs}`);
});

/** `200`, or the error code GET /v1/search must answer for this `q` as received. */
function expectedAnswer(q: string, n: number): string {
  // The document's schema: 1 to 2,000 characters, no NUL; then the service: not blank, 1,000 characters.
  if (q.length === 0 || Array.from(q).length > 2000 || q.includes('\u0000')) return 'invalid_request';
  const trimmed = q.trim();
  if (trimmed === '' || Array.from(trimmed).length > 1000) return 'invalid_request';
  if (!runPipeline(q, n).accepted) return 'invalid_query';
  return vocabularyPatterns(parseQuery(q)).length > MAX_EXPANDED_PATTERNS ? 'invalid_query' : '200';
}

describeEachDatabase('query fuzzing through GET /v1/search', (h) => {
  let acc: TestAccount;
  before(async () => {
    acc = await h.account('enterprise');
    for (const [i, w] of VOCAB.entries()) {
      const res = await h.request('POST', '/v1/data', {
        key: acc.adminKey,
        body: {
          title: `${w} title ${i}`,
          type: 'note',
          content: `${CONTENT} ${w}`,
          tags: [w],
          metadata: { author: w },
        },
      });
      assert.equal(res.status, 201, res.raw);
    }
  });

  it(`${HTTP_INPUTS} generated queries: no 5xx; a parser rejection is 400, an accepted query 200`, async (t) => {
    const stats = { requests: 0, fiveXX: 0, mismatches: 0, statuses: {} as Record<string, number> };
    const examples: string[] = [];
    await fc.assert(
      fc.asyncProperty(fuzzQuery, async (q) => {
        // What arrives: UTF-8 on the wire turns a lone surrogate into U+FFFD.
        const bytes = Buffer.from(q, 'utf8');
        const sent = bytes.toString('utf8');
        const encoded = [...bytes].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('');
        // h.request also checks every response against the OpenAPI document.
        const res = await h.request('GET', `/v1/search?q=${encoded}&limit=5`, { key: acc.adminKey });
        stats.requests++;
        const code = res.status < 400 ? String(res.status) : String(res.body?.error?.code);
        stats.statuses[code] = (stats.statuses[code] ?? 0) + 1;
        if (res.status >= 500) stats.fiveXX++;
        const expected = expectedAnswer(sent, stats.requests);
        if (code !== expected) {
          stats.mismatches++;
          if (examples.length < 10) {
            examples.push(
              `${JSON.stringify(q).slice(0, 200)}: expected ${expected}, got ${res.status} ${res.raw.slice(0, 200)}`,
            );
          }
        }
      }),
      { numRuns: HTTP_INPUTS, seed: SEED },
    );
    t.diagnostic(
      `seed ${SEED}: ${stats.requests} searches; 5xx ${stats.fiveXX}; mismatches ${stats.mismatches}; ${JSON.stringify(stats.statuses)}`,
    );
    assert.equal(stats.fiveXX, 0, examples.join('\n  '));
    assert.equal(stats.mismatches, 0, examples.join('\n  '));
  });
});
