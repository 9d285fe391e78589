import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import fc from 'fast-check';
import { parseQuery, QueryError, type QueryNode } from '../../src/search/parser.ts';
import { vocabularyPatterns } from '../../src/search/plan.ts';
import { MAX_EXPANDED_PATTERNS } from '../../src/search/search-index.ts';
import { describeEachDatabase, type TestAccount } from '../helpers/harness.ts';
import { search } from './corpus.ts';
import { evaluate, type OracleObject, prepare } from './oracle.ts';

const WORDS = ['alpha', 'beta', 'gamma', 'delta', 'running', 'runs', 'report', 'reports', 'café', 'zürich'];
const TYPES = ['document', 'note', 'record'];

/** A small seeded corpus dense enough that random queries often match something. */
function corpus(): Omit<OracleObject, 'id'>[] {
  let seed = 42;
  const rand = () => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed / 0x80000000;
  };
  const pick = () => WORDS[Math.floor(rand() * WORDS.length)]!;
  const text = (n: number) => Array.from({ length: n }, pick).join(rand() < 0.5 ? ' ' : ', ');
  return Array.from({ length: 30 }, () => ({
    title: text(1 + Math.floor(rand() * 3)),
    type: TYPES[Math.floor(rand() * 3)]!,
    content: text(Math.floor(rand() * 12)),
    tags: Array.from({ length: Math.floor(rand() * 3) }, () => text(1 + Math.floor(rand() * 2))),
    metadata: (rand() < 0.6
      ? { author: text(2), status: pick(), description: text(3), other: pick() }
      : {}) as Record<string, string>,
  }));
}

const token = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...WORDS, 'zzz', 'run', 'REPORT', 'cafe') },
  { weight: 2, arbitrary: fc.constantFrom('al*', '*ta', 'r*s', '*epor*', '*a*', 'g*m*a', 'zz*', '*ü*') },
  { weight: 3, arbitrary: fc.constantFrom(' AND ', ' OR ', ' NOT ', ' -', '(', ')', '"', ' ') },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      'title:',
      'content:',
      'tag:',
      'tags:',
      'type:',
      'author:',
      'status:',
      'description:',
      'other:',
    ),
  },
  { weight: 1, arbitrary: fc.constantFrom(...TYPES, 'doc*', '*ote') },
);
const query = fc
  .array(token, { minLength: 1, maxLength: 14 })
  .map((parts) => parts.join(' ').replace(/ {2,}/g, ' '));

describeEachDatabase('GET /search agrees with a reference evaluator', (h) => {
  let acc: TestAccount;
  let objects: OracleObject[];
  before(async () => {
    acc = await h.account('enterprise');
    objects = [];
    for (const body of corpus()) {
      const res = await h.request('POST', '/v1/data', { key: acc.adminKey, body });
      assert.equal(res.status, 201, res.raw);
      objects.push({ id: res.body.data.id, ...body });
    }
  });

  it('on 300 random queries: the same objects, the right total, never a 500', async () => {
    const docs = prepare(objects);
    await fc.assert(
      fc.asyncProperty(query, async (q) => {
        let ast: QueryNode | null = null;
        try {
          ast = parseQuery(q);
        } catch (err) {
          assert.ok(err instanceof QueryError);
        }
        const res = await search(h, acc.adminKey, { q, limit: 100 });
        if (q.trim() === '') {
          assert.equal(res.body.error?.code, 'invalid_request', 'a blank q is a parameter error');
          return;
        }
        if (ast === null || vocabularyPatterns(ast).length > MAX_EXPANDED_PATTERNS) {
          assert.equal(res.status, 400, `${q}: ${res.raw}`);
          assert.equal(res.body.error.code, 'invalid_query');
          return;
        }
        assert.equal(res.status, 200, `${q}: ${res.raw}`);
        const expected = docs.filter((d) => evaluate(d, ast)).map((d) => d.id);
        const actual: string[] = res.body.data.results.map((r: { id: string }) => r.id);
        assert.deepEqual(actual.slice().sort(), expected.sort(), q);
        assert.equal(res.body.data.total, expected.length, q);
      }),
      { numRuns: 300 },
    );
  });
});
