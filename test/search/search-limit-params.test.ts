import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import BetterSqlite3 from 'better-sqlite3';
import { createHarness, type TestAccount } from '../helpers/harness.ts';
import { search } from './corpus.ts';

/**
 * SQLite compiles the value bound to a bare `LIMIT ?` into the statement's program, so binding it
 * expires the statement and every run parses and plans it again; `LIMIT +?` keeps it a parameter
 * (docs/benchmarks.md, "SQLite: LIMIT parameters of a search"). Every statement a search prepares
 * must say `+?`. The statements are recorded as the connection prepares them: each distinct text
 * once, the first time a search runs it.
 */
describe('SQLite search statements bind their LIMITs as +?', () => {
  const h = createHarness('sqlite');
  let acc: TestAccount;
  before(async () => {
    await h.setup();
    acc = await h.account('enterprise');
    for (let i = 0; i < 6; i++) {
      const res = await h.request('POST', '/v1/data', {
        key: acc.adminKey,
        body: {
          type: i % 2 ? 'note' : 'document',
          title: `ledger ${i}`,
          content: `quarterly forensic ledger review ${i} reconciliation`,
          tags: ['audit'],
          metadata: { status: 'open' },
        },
      });
      assert.equal(res.status, 201, res.raw);
    }
  });
  after(() => h.teardown());

  it('in every shape: words, phrases, wildcards (trigram and B-tree lookups), filters, dates and sorts', async () => {
    const prepared: string[] = [];
    const proto = BetterSqlite3.prototype as unknown as { prepare: (text: string) => unknown };
    const prepare = proto.prepare;
    proto.prepare = function (this: unknown, text: string) {
      prepared.push(text);
      return prepare.call(this, text);
    };
    try {
      const queries: Record<string, string | string[]>[] = [
        { q: 'forensic' },
        { q: '"forensic ledger"' },
        { q: 'forens*' },
        { q: 'le*er' },
        { q: '*conciliat*' },
        { q: 'ledger', filter: ['type:document', 'tag:audit', 'status:open'] },
        { q: 'ledger', sort: 'date' },
        { q: 'ledger', sort: 'title', from: '2020-01-01', to: '2100-01-01' },
      ];
      for (const params of queries) {
        const res = await search(h, acc.adminKey, params);
        assert.equal(res.status, 200, res.raw);
        assert.ok(res.body.data.total > 0, `${JSON.stringify(params)} found nothing`);
      }
    } finally {
      proto.prepare = prepare;
    }
    const limited = prepared.filter((text) => /\blimit\b/i.test(text));
    const bare = limited.filter((text) => /\blimit\s+\?/i.test(text));
    assert.deepEqual(bare, [], 'statements with a bare LIMIT ?');
    // Each kind of statement that takes a LIMIT was among them.
    const kinds = {
      'infix lookup': /search_vocab_trigrams/,
      'prefix lookup': /FROM search_vocab\s+WHERE/,
      'phrase matches': /SELECT rowid AS doc FROM search_fts/,
      'filter narrowing count': /SELECT 1 FROM search_fts/,
      'filtered or sorted page': /count\(\*\) OVER \(\)/,
      'relevance page': /bm25\(/,
    };
    for (const [kind, pattern] of Object.entries(kinds)) {
      assert.ok(
        limited.some((text) => pattern.test(text)),
        `no ${kind} statement among:\n${limited.join('\n---\n')}`,
      );
    }
  });
});
