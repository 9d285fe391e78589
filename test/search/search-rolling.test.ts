import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import { type RawBuilder, sql } from 'kysely';
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

  // The arguments each older release passed after the 15 of 0007: its search statement, as
  // src/search/index-postgres.ts called it then.
  const phrase = "('alpha' <-> 'beta')";
  const gate = "(('alpha' <-> 'beta')) | !'~' | '~alpha' | '~beta'";
  const releases: [string, string, RawBuilder<unknown>][] = [
    ['before migration 0009', phrase, sql``],
    [
      "before 0017's spills (0010 to 0016: 18 arguments)",
      "('alpha' & 'beta')",
      sql`, ${phrase}::tsquery, ${gate}::tsquery, ${null}::tsquery`,
    ],
    [
      "before 0019's pair sketch (0017 to 0018: 19 arguments)",
      "('alpha' & 'beta')",
      sql`, ${phrase}::tsquery, ${gate}::tsquery, ${null}::tsquery,
        ${"(('alpha' | 'alpha~2') <-> ('beta' | 'beta~2'))"}::tsquery`,
    ],
  ];
  for (const [release, match, later] of releases)
    if (h.dialect === 'postgres')
      it(`answers the search statement of the release ${release}`, async () => {
        const { rows } = await sql<{ id: string; total: string }>`
          SELECT * FROM search_page(${acc.id}, ${match}::tsquery,
            ${"('alpha':A <-> 'beta':A)"}::tsquery, ${"('alpha':B <-> 'beta':B)"}::tsquery,
            ${phrase}::tsquery, ${null}::text, ${null}::jsonb, ${null}::jsonb,
            ${null}::timestamptz, ${null}::timestamptz, ${'relevance'}::text,
            ${true}::boolean, ${20}::int4, ${0}::int8, ${1000}::int4${later})`.execute(h.database.db);
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
