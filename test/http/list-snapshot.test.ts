import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import { describeEachDatabase, type TestAccount } from '../helpers/harness.ts';

// GET /webhooks, /api-keys and /users read their page and its total in two statements. On
// PostgreSQL, under READ COMMITTED, an item created between them made the total disagree with the
// page. Here items are created while the list is read again and again: with every item on one
// page, each answer's total must be the number of items it lists.
describeEachDatabase('lists: the page and its total from one snapshot', (h) => {
  let acc: TestAccount;
  before(async () => {
    acc = await h.account('enterprise');
  });

  const lists: [string, string, (n: number) => unknown][] = [
    ['/v1/webhooks', 'webhooks', (n) => ({ url: `https://example.com/hook/${n}`, events: ['data.created'] })],
    ['/v1/api-keys', 'keys', (n) => ({ name: `key ${n}`, scopes: ['read'] })],
    ['/v1/users', 'users', (n) => ({ email: `member${n}@example.com`, role: 'member' })],
  ];

  for (const [path, name, body] of lists)
    it(`GET ${path}`, async () => {
      const CREATES = 60;
      let created = 0;
      const writer = (async () => {
        for (let n = 1; n <= CREATES; n++) {
          const res = await h.request('POST', path, { key: acc.adminKey, body: body(n) });
          assert.equal(res.status, 201, res.raw);
          created = n;
          // Room for reads in between (on SQLite they share the writer's one connection).
          await new Promise((resolve) => setTimeout(resolve, 1));
        }
      })();
      let reads = 0;
      while (created < CREATES) {
        // A timer turn: on SQLite every request resolves without one, which would starve the writer.
        await new Promise((resolve) => setTimeout(resolve, 0));
        const res = await h.request('GET', `${path}?limit=100`, { key: acc.adminKey });
        assert.equal(res.status, 200, res.raw);
        reads++;
        const { total } = res.body.data;
        assert.equal(res.body.data[name].length, total, `read ${reads}: a total beside another page`);
      }
      await writer;
      assert.ok(reads > 10, `${reads} reads`);
    });
});
