import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { indexedWords, MAX_INDEXED_WORD_CHARS } from '../../src/search/document.ts';
import { phraseRanked, phraseRankLimits } from '../../src/search/index-sqlite.ts';
import { readVarints } from '../../src/search/phrase-rank.ts';
import { foldText, splitWords, stemWord } from '../../src/search/text.ts';
import { createHarness, describeEachDatabase, type Harness, type TestAccount } from '../helpers/harness.ts';
import { search } from './corpus.ts';

// A query that is one phrase with few matches is ranked in the service on SQLite (phrase-rank.ts),
// not by FTS5's bm25, whose count of the phrase over the whole table doubled the work. These
// objects hold phrases in every field, several times, across tag boundaries and beside words the
// index leaves out, in objects of many lengths, in two accounts.

const WORDS = ['alpha', 'beta', 'gamma', 'delta', 'report', 'reports', 'Reporting', 'café', 'x'];

/** A small deterministic generator (mulberry32). */
function prng(seed: number) {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function objects(seed: number, n: number) {
  const rnd = prng(seed);
  const pick = () => WORDS[Math.floor(rnd() * WORDS.length)]!;
  const words = (k: number) => Array.from({ length: k }, pick).join(' ');
  return Array.from({ length: n }, (_, i) => {
    const metadata: Record<string, string> = {};
    if (rnd() < 0.4) metadata.author = words(2);
    if (rnd() < 0.3) metadata.description = words(4);
    const filler = rnd() < 0.3 ? ` ${'y'.repeat(130)} ™ ` : ' ';
    return {
      title: `${words(1 + Math.floor(rnd() * 5))} ${i}`,
      type: 'note',
      content: `${words(Math.floor(rnd() * 60))}${filler}${words(Math.floor(rnd() * (i % 7 === 0 ? 400 : 40)))}`,
      tags: Array.from({ length: Math.floor(rnd() * 4) }, () => words(1 + Math.floor(rnd() * 2))),
      metadata,
    };
  });
}

const QUERIES = [
  '"alpha beta"',
  '"beta alpha"',
  '"report gamma"',
  '"alpha alpha"',
  '"gamma delta alpha"',
  '"cafe x"',
  '"x y"',
  'title:"alpha beta"',
  'tag:"beta gamma"',
  'content:"delta report"',
  'author:"gamma alpha"',
  'description:"alpha delta"',
];

interface Result {
  id: string;
  score: number;
}

async function all(h: Harness, key: string, q: string, order: 'asc' | 'desc'): Promise<Result[]> {
  const res = await search(h, key, { q, order, limit: 100 });
  assert.equal(res.status, 200, res.raw);
  assert.equal(res.body.data.total, res.body.data.results.length, q);
  return res.body.data.results.map((r: Result) => ({ id: r.id, score: r.score }));
}

describeEachDatabase('GET /search: a one-phrase query', (h) => {
  let acc: TestAccount;
  before(async () => {
    acc = await h.account('enterprise');
    for (const body of objects(7, 60)) {
      const res = await h.request('POST', '/v1/data', { key: acc.adminKey, body });
      assert.equal(res.status, 201, res.raw);
    }
  });

  it('orders by field tier, pages without overlap, and reverses with order=asc', async () => {
    for (const q of QUERIES) {
      const desc = await all(h, acc.adminKey, q, 'desc');
      const tiers = desc.map((r) => Math.floor(r.score * 7));
      assert.deepEqual(
        tiers,
        [...tiers].sort((a, b) => b - a),
        `${q}: title, then tags, then the rest`,
      );
      for (let i = 1; i < desc.length; i++) assert.ok(desc[i]!.score <= desc[i - 1]!.score, q);
      const asc = await all(h, acc.adminKey, q, 'asc');
      assert.deepEqual(
        asc.map((r) => r.id),
        desc.map((r) => r.id).reverse(),
        q,
      );
      const paged: string[] = [];
      for (let page = 1; page <= Math.ceil(desc.length / 7) + 1; page++) {
        const res = await search(h, acc.adminKey, { q, limit: 7, page });
        assert.equal(res.status, 200);
        assert.equal(res.body.data.total, desc.length, q);
        paged.push(...res.body.data.results.map((r: Result) => r.id));
      }
      assert.deepEqual(
        paged,
        desc.map((r) => r.id),
        `${q}: pages`,
      );
    }
  });
});

describe('SQLite: a one-phrase query ranked in the service orders as bm25 does', () => {
  const h = createHarness('sqlite');
  let acc: TestAccount;
  let other: TestAccount;
  before(async () => {
    await h.setup();
    acc = await h.account('enterprise');
    other = await h.account('enterprise');
    // The other account's objects hold the same phrases: neither bm25 nor the service counts them
    // (their tokens carry the other account's tag).
    for (const [a, body] of [
      ...objects(11, 70).map((b) => [acc, b] as const),
      ...objects(12, 50).map((b) => [other, b] as const),
    ]) {
      const res = await h.request('POST', '/v1/data', { key: a.adminKey, body });
      assert.equal(res.status, 201, res.raw);
    }
  });
  after(async () => {
    phraseRankLimits.matches = 100;
    await h.teardown();
  });

  /** The bm25 value back from a score: score·7 = tier + 1 - 5 / (10 + s). */
  const bm25Of = (score: number) => {
    const x = score * 7 - Math.floor(score * 7) - 1;
    return -5 / x - 10;
  };

  it('gives the same results, order, tiers, totals and scores', async () => {
    let ranked = 0;
    let compared = 0;
    for (const q of QUERIES) {
      for (const order of ['desc', 'asc'] as const) {
        phraseRankLimits.matches = 100;
        const before = phraseRanked.pages;
        const service = await all(h, acc.adminKey, q, order);
        ranked += phraseRanked.pages - before;
        phraseRankLimits.matches = 0;
        const fts = await all(h, acc.adminKey, q, order);
        assert.deepEqual(
          service.map((r) => r.id),
          fts.map((r) => r.id),
          `${q} ${order}`,
        );
        assert.deepEqual(
          service.map((r) => Math.floor(r.score * 7)),
          fts.map((r) => Math.floor(r.score * 7)),
          `${q} ${order}: tiers`,
        );
        // The phrase's IDF counts the account's rows on both paths, so the values are bm25's.
        for (let i = 0; i < service.length; i++) {
          const [s, f] = [bm25Of(service[i]!.score), bm25Of(fts[i]!.score)];
          assert.ok(Math.abs(s / f - 1) < 1e-9, `${q} ${order} row ${i}: bm25 ${s} against ${f}`);
          compared++;
        }
      }
    }
    assert.ok(compared > 200, `compared ${compared} results`);
    assert.ok(ranked > 0, 'the service ranked at least some queries itself');
  });

  it('leaves phrases with more matches than the limit to bm25, with the same answer', async () => {
    phraseRankLimits.matches = 3;
    const few = await all(h, acc.adminKey, '"alpha beta"', 'desc');
    phraseRankLimits.matches = 0;
    const fts = await all(h, acc.adminKey, '"alpha beta"', 'desc');
    assert.ok(few.length > 3);
    assert.deepEqual(few, fts);
  });
});

describe('what ranking a phrase in the service relies on', () => {
  it('stemming keeps a word’s first character (phraseCounts skips other words unstemmed)', () => {
    const endings = ['', 's', 'ies', 'sses', 'ing', 'ed', 'eed', 'y', 'ly', 'ational', 'ization', 'biliti'];
    fc.assert(
      fc.property(fc.stringMatching(/^[a-z0-9]{1,14}$/), fc.constantFrom(...endings), (root, end) => {
        const w = root + end;
        assert.equal(stemWord(w)[0], w[0], `${w} -> ${stemWord(w)}`);
      }),
      { numRuns: 30_000 },
    );
    for (const w of ['y', 'ys', 'yes', 'ies', 'sses', 'eed', 'ing', 'yying', 'ed'])
      assert.equal(stemWord(w)[0], w[0], w);
  });

  it('indexedWords gives ASCII text the words of the general path (fold, split, length cap)', () => {
    const general = (t: string) => splitWords(foldText(t)).filter((w) => w.length <= MAX_INDEXED_WORD_CHARS);
    const ascii = fc.oneof(
      fc.string({
        unit: fc.integer({ min: 0, max: 127 }).map((c) => String.fromCharCode(c)),
        maxLength: 300,
      }),
      fc
        .array(
          fc.constantFrom(
            'Word',
            'ABC',
            'x1',
            ' ',
            '-',
            '\0',
            '\t',
            '_',
            "'",
            'é',
            'a'.repeat(129),
            'A'.repeat(128),
          ),
          {
            maxLength: 40,
          },
        )
        .map((p) => p.join('')),
    );
    fc.assert(
      fc.property(ascii, (t) => assert.deepEqual(indexedWords(t), general(t), JSON.stringify(t))),
      { numRuns: 5_000 },
    );
  });

  it('reads SQLite varints', () => {
    assert.deepEqual(
      readVarints(Uint8Array.from([0x00, 0x7f, 0x81, 0x00, 0x82, 0x80, 0x01])),
      [0, 127, 128, 0x8001],
    );
    assert.deepEqual(readVarints(Uint8Array.from([0x81, 0x80, 0x00, 0x05])), [16_384, 5]);
  });
});
