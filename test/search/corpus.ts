import assert from 'node:assert/strict';
import { sql } from 'kysely';
import type { Harness, TestAccount, TestResponse } from '../helpers/harness.ts';

/** The seeded objects of the search suites, by name; each `at` becomes its created_at. */
export const CORPUS = {
  report: {
    at: '2026-01-01T00:00:00.000Z',
    body: {
      title: 'Quarterly finance report',
      type: 'document',
      content: 'Revenue grew in the third quarter while running costs fell. Common ground.',
      tags: ['finance', 'q3'],
      metadata: { author: 'Ann Smith', status: 'published', description: 'Board pack', region: 'emea' },
    },
  },
  budget: {
    at: '2026-01-31T23:59:59.999Z',
    body: {
      title: 'Budget planning',
      type: 'note',
      content: 'The financial plan for next year covers hiring and travel. Common sense.',
      tags: ['planning', 'finance'],
      metadata: { author: 'Bob Jones', status: 'draft' },
    },
  },
  logs: {
    at: '2026-02-01T00:00:00.000Z',
    body: {
      title: 'Server logs',
      type: 'record',
      content: 'Error at startup: the finance module failed to load. Common failure.',
      tags: ['ops'],
      metadata: { status: 'archived' },
    },
  },
  cafe: {
    at: '2026-02-15T12:00:00.000Z',
    body: {
      title: 'Café menu',
      type: 'note',
      content: 'Crème brûlée and espresso for the Zürich office. Common room.',
      tags: ['food', 'office life'],
      metadata: {},
    },
  },
  security: {
    at: '2026-03-01T00:00:00.000Z',
    body: {
      title: 'Security review',
      type: 'document',
      content: 'Found <script>alert("x")</script> in a comment & fixed it. Common mistake.',
      tags: ['security'],
      metadata: { author: 'Ann Smith' },
    },
  },
} as const;

export type CorpusName = keyof typeof CORPUS;

/** Creates the corpus in the account at the given instants; returns id -> name and name -> id. */
export async function seedCorpus(h: Harness, acc: TestAccount) {
  const byName = {} as Record<CorpusName, string>;
  const byId = new Map<string, CorpusName>();
  for (const [name, { at, body }] of Object.entries(CORPUS) as [CorpusName, (typeof CORPUS)[CorpusName]][]) {
    h.clock.now = Date.parse(at);
    try {
      const res = await h.request('POST', '/v1/data', { key: acc.adminKey, body });
      assert.equal(res.status, 201, res.raw);
      byName[name] = res.body.data.id;
      byId.set(res.body.data.id, name);
    } finally {
      h.clock.now = null;
    }
  }
  return { byName, byId };
}

/** GET /v1/search with the given parameters (arrays repeat the parameter). */
export function search(
  h: Harness,
  key: string,
  params: Record<string, string | number | string[]>,
): Promise<TestResponse> {
  const qs = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    for (const item of Array.isArray(v) ? v : [v]) qs.append(k, String(item));
  }
  return h.request('GET', `/v1/search?${qs}`, { key });
}

/** Creates notes from named bodies in the account; returns name -> id. */
export async function createNotes(
  h: Harness,
  acc: TestAccount,
  bodies: Record<string, Record<string, unknown>>,
): Promise<Record<string, string>> {
  const ids: Record<string, string> = {};
  for (const [name, body] of Object.entries(bodies)) {
    const res = await h.request('POST', '/v1/data', { key: acc.adminKey, body: { type: 'note', ...body } });
    assert.equal(res.status, 201, res.raw);
    ids[name] = res.body.data.id;
  }
  return ids;
}

/** The ids a search finds (up to 100), sorted. */
export async function foundIds(h: Harness, key: string, q: string): Promise<string[]> {
  const res = await search(h, key, { q, limit: 100 });
  assert.equal(res.status, 200, res.raw);
  return (res.body.data.results as { id: string }[]).map((r) => r.id).sort();
}

/** The account's vocabulary count of `word`: `[n]`, or `[]` when the vocabulary lacks it. */
export async function vocabularyCount(h: Harness, accountId: string, word: string): Promise<number[]> {
  const { rows } = await sql<{ docs: number }>`
    SELECT sum(docs) AS docs FROM search_vocab WHERE account_id = ${accountId} AND word = ${word}
    GROUP BY word`.execute(h.database.db);
  return rows.map((r) => Number(r.docs));
}
