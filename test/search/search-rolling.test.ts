import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import { sql } from 'kysely';
import { describeEachDatabase, type TestAccount } from '../helpers/harness.ts';

// docs/deployment.md "Migrations": the previous release keeps working against the new schema
// during a rolling deploy. Its search is one call of the 15-argument search_page (migrations
// 0007/0008); 0009, 0010, 0017 and 0019 add overloads beside it.
describeEachDatabase('search during a rolling deploy', (h) => {
  let acc: TestAccount;
  let id: string;
  before(async () => {
    acc = await h.account('enterprise');
    const res = await h.request('POST', '/v1/data', {
      key: acc.adminKey,
      body: { title: 'Quarterly report', type: 'note', content: 'alpha beta gamma' },
    });
    assert.equal(res.status, 201, res.raw);
    id = res.body.data.id;
  });

  if (h.dialect === 'postgres')
    it("answers the previous release's search statement", async () => {
      // As src/search/index-postgres.ts called it before migration 0009.
      const { rows } = await sql<{ id: string; total: string }>`
        SELECT * FROM search_page(${acc.id}, ${"('alpha' <-> 'beta')"}::tsquery,
          ${"('alpha':A <-> 'beta':A)"}::tsquery, ${"('alpha':B <-> 'beta':B)"}::tsquery,
          ${"('alpha' <-> 'beta')"}::tsquery, ${null}::text, ${null}::jsonb, ${null}::jsonb,
          ${null}::timestamptz, ${null}::timestamptz, ${'relevance'}::text,
          ${true}::boolean, ${20}::int4, ${0}::int8, ${1000}::int4)`.execute(h.database.db);
      assert.deepEqual(
        rows.map((r) => [r.id, Number(r.total)]),
        [[id, 1]],
      );
    });

  if (h.dialect === 'postgres')
    it("answers the search statement of the release before 0017's spills", async () => {
      // As src/search/index-postgres.ts called it from migration 0010 to 0016: 18 arguments.
      const { rows } = await sql<{ id: string; total: string }>`
        SELECT * FROM search_page(${acc.id}, ${"('alpha' & 'beta')"}::tsquery,
          ${"('alpha':A <-> 'beta':A)"}::tsquery, ${"('alpha':B <-> 'beta':B)"}::tsquery,
          ${"('alpha' <-> 'beta')"}::tsquery, ${null}::text, ${null}::jsonb, ${null}::jsonb,
          ${null}::timestamptz, ${null}::timestamptz, ${'relevance'}::text,
          ${true}::boolean, ${20}::int4, ${0}::int8, ${1000}::int4, ${"('alpha' <-> 'beta')"}::tsquery,
          ${"(('alpha' <-> 'beta')) | !'~' | '~alpha' | '~beta'"}::tsquery, ${null}::tsquery)`.execute(
        h.database.db,
      );
      assert.deepEqual(
        rows.map((r) => [r.id, Number(r.total)]),
        [[id, 1]],
      );
    });

  if (h.dialect === 'postgres')
    it("answers the search statement of the release before 0019's pair sketch", async () => {
      // As src/search/index-postgres.ts called it from migration 0017 to 0018: 19 arguments.
      const { rows } = await sql<{ id: string; total: string }>`
        SELECT * FROM search_page(${acc.id}, ${"('alpha' & 'beta')"}::tsquery,
          ${"('alpha':A <-> 'beta':A)"}::tsquery, ${"('alpha':B <-> 'beta':B)"}::tsquery,
          ${"('alpha' <-> 'beta')"}::tsquery, ${null}::text, ${null}::jsonb, ${null}::jsonb,
          ${null}::timestamptz, ${null}::timestamptz, ${'relevance'}::text,
          ${true}::boolean, ${20}::int4, ${0}::int8, ${1000}::int4, ${"('alpha' <-> 'beta')"}::tsquery,
          ${"(('alpha' <-> 'beta')) | !'~' | '~alpha' | '~beta'"}::tsquery, ${null}::tsquery,
          ${"(('alpha' | 'alpha~2') <-> ('beta' | 'beta~2'))"}::tsquery)`.execute(h.database.db);
      assert.deepEqual(
        rows.map((r) => [r.id, Number(r.total)]),
        [[id, 1]],
      );
    });

  it('and the current one', async () => {
    const res = await h.request('GET', '/v1/search?q=%22alpha%20beta%22', { key: acc.adminKey });
    assert.equal(res.status, 200, res.raw);
    assert.deepEqual(
      res.body.data.results.map((r: { id: string }) => r.id),
      [id],
    );
  });
});
