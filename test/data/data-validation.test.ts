import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import { describeEachDatabase, type Harness, type TestAccount } from '../helpers/harness.ts';

/** A body fragment that breaks one rule of decisions §5, and the field `error.details` must name. */
type Case = [label: string, fragment: Record<string, unknown>, field: string];

const keys = (n: number, len = 3) =>
  Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`.padEnd(len, 'x'), 'v']));

// Rules that apply to a field whether it is created or patched.
const FIELD_CASES: Case[] = [
  ['empty title', { title: '' }, 'title'],
  ['blank title', { title: '   ' }, 'title'],
  ['whitespace-only title', { title: '\t\n\r ' }, 'title'],
  ['title of invisible characters', { title: '\u200b\u2060\u00ad\ufeff' }, 'title'],
  ['title of no-break and ideographic spaces', { title: '\u00a0\u3000' }, 'title'],
  ['title of a Hangul filler', { title: '\u3164' }, 'title'],
  ['title of lone combining marks', { title: '\u034f\ufe0f' }, 'title'],
  // U+0085 is White_Space but not in JavaScript's \s; controls show nothing either.
  ['title of a NEXT LINE', { title: '\u0085' }, 'title'],
  ['title of NEXT LINE and spaces', { title: '\u0085 \u00a0' }, 'title'],
  ['title of control characters', { title: '\u0001\u0007\u009f' }, 'title'],
  ['title over 500', { title: 't'.repeat(501) }, 'title'],
  ['title over 500 characters of emoji', { title: '😀'.repeat(501) }, 'title'],
  ['numeric title', { title: 123 }, 'title'],
  ['null title', { title: null }, 'title'],
  ['array title', { title: ['t'] }, 'title'],
  ['unknown type', { type: 'memo' }, 'type'],
  ['type in another case', { type: 'Note' }, 'type'],
  ['empty type', { type: '' }, 'type'],
  ['null type', { type: null }, 'type'],
  ['numeric content', { content: 1 }, 'content'],
  ['null content', { content: null }, 'content'],
  ['object content', { content: { text: 'x' } }, 'content'],
  ['tags as string', { tags: 'a,b' }, 'tags'],
  ['numeric tag', { tags: [1] }, 'tags'],
  ['null tag', { tags: [null] }, 'tags'],
  ['nested tag', { tags: [['a']] }, 'tags'],
  ['empty tag', { tags: ['ok', ''] }, 'tags'],
  ['blank tag', { tags: ['ok', '   '] }, 'tags'],
  ['tag of a zero-width space', { tags: ['\u200b'] }, 'tags'],
  ['tag of a blank Braille pattern', { tags: ['\u2800'] }, 'tags'],
  ['tag of a NEXT LINE', { tags: ['ok', '\u0085'] }, 'tags'],
  ['tag over 64', { tags: ['x'.repeat(65)] }, 'tags'],
  ['51 tags', { tags: Array.from({ length: 51 }, (_, i) => `t${i}`) }, 'tags'],
  ['metadata array', { metadata: ['a'] }, 'metadata'],
  ['metadata string', { metadata: 'a=b' }, 'metadata'],
  ['metadata null', { metadata: null }, 'metadata'],
  ['51 metadata keys', { metadata: keys(51) }, 'metadata'],
  ['empty metadata key', { metadata: { '': 'v' } }, 'metadata'],
  ['metadata key over 64', { metadata: { ['k'.repeat(65)]: 'v' } }, 'metadata'],
  ['metadata value over 1000', { metadata: { k: 'v'.repeat(1001) } }, 'metadata'],
  ['numeric metadata value', { metadata: { k: 1 } }, 'metadata'],
  ['boolean metadata value', { metadata: { k: true } }, 'metadata'],
  ['null metadata value', { metadata: { k: null } }, 'metadata'],
  ['object metadata value', { metadata: { k: { v: 'x' } } }, 'metadata'],
  ['array metadata value', { metadata: { k: ['x'] } }, 'metadata'],
  // NUL is refused by PostgreSQL text; lone surrogates cannot be stored as UTF-8 unchanged.
  ['NUL in title', { title: 'a\u0000b' }, 'title'],
  ['NUL in content', { content: 'x\u0000' }, 'content'],
  ['NUL in a tag', { tags: ['\u0000'] }, 'tags'],
  ['NUL in a metadata key', { metadata: { 'k\u0000': 'v' } }, 'metadata'],
  ['NUL in a metadata value', { metadata: { k: '\u0000' } }, 'metadata'],
  ['high surrogate in title', { title: 'a\ud800' }, 'title'],
  ['low surrogate in content', { content: '\udfffz' }, 'content'],
  ['reversed pair in content', { content: '\ude00\ud83d' }, 'content'],
  ['lone surrogate in a tag', { tags: ['\ud83d'] }, 'tags'],
  ['lone surrogate in a metadata key', { metadata: { '\udc00': 'v' } }, 'metadata'],
  ['lone surrogate in a metadata value', { metadata: { k: 'x\ud800y' } }, 'metadata'],
  ['unknown field', { colour: 'red' }, 'colour'],
  ['client-chosen id', { id: 'dat_01JD4Z5T8N3QK9W2V7R6M1B0XC' }, 'id'],
  ['client-chosen account', { account_id: 'acc_01JD4Z5T8N3QK9W2V7R6M1B0XC' }, 'account_id'],
  ['client-chosen created_at', { created_at: '2020-01-01T00:00:00.000Z' }, 'created_at'],
];

const CREATE_ONLY: Case[] = [
  ['missing title', { title: undefined }, 'title'],
  ['missing type', { type: undefined }, 'type'],
];

/** Valid extremes: each must be accepted and stored exactly. */
const BOUNDARY: [string, Record<string, unknown>][] = [
  ['title of 500', { title: 't'.repeat(500) }],
  ['title of 500 emoji (characters, not UTF-16 units)', { title: '😀'.repeat(500) }],
  ['title with surrounding spaces', { title: '  padded  ' }],
  ['title of an emoji with its variation selector', { title: '\u2764\ufe0f' }],
  ['title of a decomposed accent', { title: 'e\u0301' }],
  ['every type', { type: 'record' }],
  ['unicode content', { content: 'Zoë 😀 \u4e2d\u6587\n\ttabs "quotes" <b>&amp;</b>' }],
  ['50 tags of 64', { tags: Array.from({ length: 50 }, (_, i) => `${i}`.padEnd(64, 'x')) }],
  ['a one-character tag', { tags: ['a'] }],
  ['50 metadata keys of 64', { metadata: keys(50, 64) }],
  ['metadata value of 1000 and empty', { metadata: { long: 'v'.repeat(1000), empty: '' } }],
  ['empty content, tags and metadata', { content: '', tags: [], metadata: {} }],
];

/** Data rows and events of the account, and the full row of `id` when given. */
async function snapshot(h: Harness, accountId: string, id?: string) {
  const count = (table: 'data_objects' | 'events') =>
    h.database.db
      .selectFrom(table)
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('account_id', '=', accountId)
      .executeTakeFirstOrThrow()
      .then((r) => Number(r.n));
  const row = id
    ? await h.database.db.selectFrom('data_objects').selectAll().where('id', '=', id).executeTakeFirst()
    : undefined;
  return { rows: await count('data_objects'), events: await count('events'), row };
}

describeEachDatabase('data objects: validation of create and patch (decisions §5)', (h) => {
  let acc: TestAccount;
  let target: string;
  before(async () => {
    acc = await h.account('enterprise');
    const created = await h.request('POST', '/v1/data', {
      key: acc.adminKey,
      body: { title: 'Target', type: 'note', content: 'c', tags: ['t'], metadata: { k: 'v' } },
    });
    target = created.body.data.id;
  });

  /** Sends one bad body and checks the 400 envelope, the named field and that nothing changed. */
  const expectRefused = async (method: 'POST' | 'PATCH', body: Record<string, unknown>, field: string) => {
    const url = method === 'POST' ? '/v1/data' : `/v1/data/${target}`;
    const before = await snapshot(h, acc.id, target);
    const res = await h.request(method, url, { key: acc.adminKey, body });
    assert.equal(
      res.status,
      400,
      `${method} ${JSON.stringify(body).slice(0, 120)}: ${res.raw.slice(0, 200)}`,
    );
    assert.equal(res.body.error.code, 'invalid_request');
    const details: { field: string; message: string }[] = res.body.error.details;
    assert.ok(Array.isArray(details) && details.length > 0, 'details present');
    assert.ok(
      details.some((d) => d.field === field || d.field.startsWith(`${field}.`)),
      `details ${JSON.stringify(details)} name ${field}`,
    );
    assert.deepEqual(await snapshot(h, acc.id, target), before, 'no row and no event changed');
  };

  for (const [label, fragment, field] of [...FIELD_CASES, ...CREATE_ONLY]) {
    it(`POST refuses ${label}`, async () => {
      await expectRefused('POST', { title: 'Valid', type: 'note', ...fragment }, field);
    });
  }

  for (const [label, fragment, field] of FIELD_CASES) {
    it(`PATCH refuses ${label}`, async () => {
      await expectRefused('PATCH', fragment, field);
    });
  }

  it('PATCH refuses a bad field even beside a good one, changing nothing', async () => {
    await expectRefused('PATCH', { title: 'Changed', tags: [''] }, 'tags');
    await expectRefused('PATCH', { content: 'changed', metadata: { k: 2 } }, 'metadata');
  });

  for (const [label, fragment] of BOUNDARY) {
    it(`accepts ${label} on create and on patch, stored exactly`, async () => {
      const body = { title: 'Valid', type: 'note', ...fragment };
      const before = await snapshot(h, acc.id);
      const created = await h.request('POST', '/v1/data', { key: acc.adminKey, body });
      assert.equal(created.status, 201, created.raw.slice(0, 300));
      const after = await snapshot(h, acc.id);
      assert.deepEqual([after.rows, after.events], [before.rows + 1, before.events + 1]);
      const got = await h.request('GET', `/v1/data/${created.body.data.id}`, { key: acc.adminKey });
      for (const [k, v] of Object.entries(fragment)) assert.deepEqual(got.body.data[k], v, k);

      const patched = await h.request('PATCH', `/v1/data/${target}`, { key: acc.adminKey, body: fragment });
      assert.equal(patched.status, 200, patched.raw.slice(0, 300));
      for (const [k, v] of Object.entries(fragment)) assert.deepEqual(patched.body.data[k], v, k);
    });
  }

  it('refuses an array or object of more than 1,000 members before validating it', async () => {
    const items = (n: number) => Array.from({ length: n }, (_, i) => `"t${i}"`).join(',');
    const fields = (n: number) => Array.from({ length: n }, (_, i) => `"k${i}":"v"`).join(',');
    const wide = [
      `{"title":"x","type":"note","tags":[${items(1001)}]}`,
      `{"title":"x","type":"note","metadata":{${fields(1001)}}}`,
      `{"title":"x","type":"note",${fields(1001)}}`,
      `{"title":"x","type":"note","metadata":{"k":[[${items(200_000)}]]}}`,
    ];
    for (const rawBody of wide) {
      const res = await h.request('POST', '/v1/data', {
        key: acc.adminKey,
        rawBody,
        headers: { 'content-type': 'application/json' },
      });
      assert.equal(res.status, 400, res.raw.slice(0, 200));
      assert.equal(res.body.error.code, 'invalid_request');
      assert.match(res.body.error.message, /more than 1000 members/);
    }
    // Commas inside strings are text; 1,000 members still reach validation (which wants 50 tags).
    const text = `{"title":"commas","type":"note","content":"${','.repeat(5000)}"}`;
    assert.equal(
      (
        await h.request('POST', '/v1/data', {
          key: acc.adminKey,
          rawBody: text,
          headers: { 'content-type': 'application/json' },
        })
      ).status,
      201,
    );
    const thousand = await h.request('POST', '/v1/data', {
      key: acc.adminKey,
      rawBody: `{"title":"x","type":"note","tags":[${items(1000)}]}`,
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(thousand.status, 400);
    assert.match(thousand.body.error.message, /tags must NOT have more than 50 items/);
  });
});
