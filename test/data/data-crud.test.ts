import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import { describeEachDatabase, type TestAccount } from '../helpers/harness.ts';

describeEachDatabase('data objects: create, read, update, delete', (h) => {
  let acc: TestAccount;
  before(async () => {
    acc = await h.account();
  });

  it('creates an object and returns every field in the envelope', async () => {
    const res = await h.request('POST', '/v1/data', {
      key: acc.adminKey,
      body: {
        title: 'Quarterly report',
        type: 'document',
        content: 'Revenue grew.',
        tags: ['finance', 'q3', 'finance'],
        metadata: { author: 'ann' },
      },
    });
    assert.equal(res.status, 201);
    const d = res.body.data;
    assert.match(d.id, /^dat_[0-9A-HJKMNP-TV-Z]{26}$/);
    assert.equal(d.title, 'Quarterly report');
    assert.equal(d.type, 'document');
    assert.equal(d.content, 'Revenue grew.');
    assert.deepEqual(d.tags, ['finance', 'q3'], 'duplicates dropped, order kept');
    assert.deepEqual(d.metadata, { author: 'ann' });
    assert.match(d.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.equal(d.updated_at, null);
    assert.match(res.body.meta.request_id, /^req_/);
    assert.equal(res.headers['x-request-id'], res.body.meta.request_id);
    assert.match(res.body.meta.timestamp, /Z$/);
  });

  it('defaults optional fields and reads the object back through /data/{id} and /items/{id}', async () => {
    const created = await h.request('POST', '/v1/data', {
      key: acc.adminKey,
      body: { title: 'Bare', type: 'note' },
    });
    assert.equal(created.status, 201);
    assert.deepEqual(
      [created.body.data.content, created.body.data.tags, created.body.data.metadata],
      ['', [], {}],
    );
    for (const path of ['/v1/data/', '/v1/items/']) {
      const got = await h.request('GET', path + created.body.data.id, { key: acc.adminKey });
      assert.equal(got.status, 200);
      assert.deepEqual(got.body.data, created.body.data);
    }
  });

  it('answers GET with the bytes JSON.stringify writes, the same object POST and PATCH answered', async () => {
    // SQLite serialises the object itself (json_object, json() of the stored tags and metadata).
    let controls = '';
    for (let c = 1; c < 0x20; c++) controls += String.fromCharCode(c);
    const tricky = `q " b \\ s / ${controls} \u007f \u2028 \u2029 é 日本 😀 <b>&amp;`;
    const created = await h.request('POST', '/v1/data', {
      key: acc.adminKey,
      body: {
        title: tricky,
        type: 'record',
        content: `${tricky}\n`.repeat(40),
        tags: [tricky.slice(0, 60), 'b', '10', 'a'],
        // Keys in an order JavaScript changes (integer-like keys first) and values with escapes.
        metadata: { z: tricky, '2': 'two', a: '"', '1': '\\' },
      },
    });
    assert.equal(created.status, 201, created.raw.slice(0, 300));
    const id = created.body.data.id;
    const get = async () => {
      const res = await h.request('GET', `/v1/data/${id}`, { key: acc.adminKey });
      assert.equal(res.status, 200, res.raw.slice(0, 300));
      assert.equal(res.raw, JSON.stringify(res.body));
      assert.equal(res.headers['content-type'], 'application/json; charset=utf-8');
      return res;
    };
    const first = await get();
    assert.deepEqual(first.body.data, created.body.data);
    assert.equal(
      JSON.stringify(first.body.data),
      JSON.stringify(created.body.data),
      'same member order, metadata keys included',
    );
    const patched = await h.request('PATCH', `/v1/data/${id}`, {
      key: acc.adminKey,
      body: { tags: [], metadata: {} },
    });
    assert.equal(patched.status, 200);
    const second = await get();
    assert.equal(JSON.stringify(second.body.data), JSON.stringify(patched.body.data));
    assert.deepEqual([second.body.data.tags, second.body.data.metadata], [[], {}]);
    assert.match(second.body.data.updated_at, /Z$/);
    assert.match(second.body.meta.request_id, /^req_/);
    assert.equal(second.headers['x-request-id'], second.body.meta.request_id);
  });

  it('is listed immediately with exactly id, title, type and created_at', async () => {
    const created = await h.request('POST', '/v1/data', {
      key: acc.adminKey,
      body: { title: 'Listed', type: 'record', content: 'x' },
    });
    const list = await h.request('GET', '/v1/data?limit=100', { key: acc.adminKey });
    assert.equal(list.status, 200);
    const item = list.body.data.items.find((i: { id: string }) => i.id === created.body.data.id);
    assert.deepEqual(Object.keys(item).sort(), ['created_at', 'id', 'title', 'type']);
  });

  it('patches fields whole, sets updated_at and records data.updated only when something changed', async () => {
    const created = await h.request('POST', '/v1/data', {
      key: acc.adminKey,
      body: { title: 'Draft', type: 'note', tags: ['a'], metadata: { k: '1', j: '2' } },
    });
    const id = created.body.data.id;
    const events = async () =>
      (
        await h.database.db
          .selectFrom('events')
          .select(['name', 'payload'])
          .where('account_id', '=', acc.id)
          .execute()
      )
        .filter((e) => JSON.parse(e.payload).data.id === id)
        .map((e) => ({ name: e.name, data: JSON.parse(e.payload).data }));

    const same = await h.request('PATCH', `/v1/data/${id}`, {
      key: acc.adminKey,
      body: { title: 'Draft', metadata: { j: '2', k: '1' } },
    });
    assert.equal(same.status, 200);
    assert.equal(same.body.data.updated_at, null, 'no change, no updated_at');
    assert.deepEqual(
      (await events()).map((e) => e.name),
      ['data.created'],
    );

    const changed = await h.request('PATCH', `/v1/data/${id}`, {
      key: acc.adminKey,
      body: { title: 'Final', tags: ['b', 'b', 'c'], content: 'done' },
    });
    assert.equal(changed.status, 200);
    assert.equal(changed.body.data.title, 'Final');
    assert.deepEqual(changed.body.data.tags, ['b', 'c']);
    assert.equal(changed.body.data.type, 'note', 'untouched fields stay');
    assert.deepEqual(changed.body.data.metadata, { k: '1', j: '2' });
    assert.ok(changed.body.data.updated_at);
    const evs = await events();
    assert.deepEqual(
      evs.map((e) => e.name),
      ['data.created', 'data.updated'],
    );
    assert.deepEqual(evs[1]?.data, {
      id,
      title: 'Final',
      type: 'note',
      changed: ['title', 'content', 'tags'],
    });

    const got = await h.request('GET', `/v1/data/${id}`, { key: acc.adminKey });
    assert.deepEqual(got.body.data, changed.body.data);
  });

  it('deletes permanently: 204 with no body, then 404 everywhere, and records data.deleted', async () => {
    const created = await h.request('POST', '/v1/data', {
      key: acc.adminKey,
      body: { title: 'Doomed', type: 'note', content: 'secret words' },
    });
    const id = created.body.data.id;
    const del = await h.request('DELETE', `/v1/data/${id}`, { key: acc.adminKey });
    assert.equal(del.status, 204);
    assert.equal(del.raw, '');
    for (const [method, path] of [
      ['GET', `/v1/data/${id}`],
      ['GET', `/v1/items/${id}`],
      ['PATCH', `/v1/data/${id}`],
      ['DELETE', `/v1/data/${id}`],
    ] as const) {
      const res = await h.request(method, path, {
        key: acc.adminKey,
        body: method === 'PATCH' ? { title: 'x' } : undefined,
      });
      assert.equal(res.status, 404, `${method} ${path}`);
      assert.equal(res.body.error.code, 'not_found');
    }
    const row = await h.database.db
      .selectFrom('data_objects')
      .select('id')
      .where('id', '=', id)
      .executeTakeFirst();
    assert.equal(row, undefined);
    const ev = await h.database.db
      .selectFrom('events')
      .select('payload')
      .where('name', '=', 'data.deleted')
      .execute();
    assert.ok(
      ev.some((e) => JSON.parse(e.payload).data.id === id && JSON.parse(e.payload).data.title === 'Doomed'),
    );
  });

  it("answers another account's object, and a malformed id, with 404 like a missing one", async () => {
    const other = await h.account();
    const theirs = await h.request('POST', '/v1/data', {
      key: other.adminKey,
      body: { title: 'Theirs', type: 'note' },
    });
    const id = theirs.body.data.id;
    for (const [method, path] of [
      ['GET', `/v1/data/${id}`],
      ['GET', `/v1/items/${id}`],
      ['PATCH', `/v1/data/${id}`],
      ['DELETE', `/v1/data/${id}`],
      ['GET', '/v1/data/dat_nope'],
      ['GET', '/v1/data/usr_01JD4Z5T8N3QK9W2V7R6M1B0XC'],
    ] as const) {
      const res = await h.request(method, path, {
        key: acc.adminKey,
        body: method === 'PATCH' ? { title: 'x' } : undefined,
      });
      assert.equal(res.status, 404, `${method} ${path}`);
      assert.equal(res.body.error.code, 'not_found');
    }
    const still = await h.request('GET', `/v1/data/${id}`, { key: other.adminKey });
    assert.equal(still.body.data.title, 'Theirs', 'untouched by the other account');
    const list = await h.request('GET', '/v1/data?limit=100', { key: acc.adminKey });
    assert.ok(!list.body.data.items.some((i: { id: string }) => i.id === id));
  });

  it('answers a PATCH and a DELETE of one object at once with 200/404 and 204, and leaves no index words', async () => {
    const racer = await h.account('enterprise');
    const ids: string[] = [];
    for (let i = 0; i < 30; i++) {
      const res = await h.request('POST', '/v1/data', {
        key: racer.adminKey,
        body: { title: `racer ${i}`, type: 'note', content: 'raceoldword' },
      });
      ids.push(res.body.data.id);
    }
    const outcomes = await Promise.all(
      ids.flatMap((id) => [
        h
          .request('PATCH', `/v1/data/${id}`, {
            key: racer.adminKey,
            body: { title: 'changed', content: 'racenewword' },
          })
          .then((r) => `PATCH ${r.status}`),
        h.request('DELETE', `/v1/data/${id}`, { key: racer.adminKey }).then((r) => `DELETE ${r.status}`),
      ]),
    );
    const counts = new Map<string, number>();
    for (const o of outcomes) counts.set(o, (counts.get(o) ?? 0) + 1);
    assert.equal(counts.get('DELETE 204'), 30, JSON.stringify([...counts]));
    assert.equal(
      (counts.get('PATCH 200') ?? 0) + (counts.get('PATCH 404') ?? 0),
      30,
      JSON.stringify([...counts]),
    );
    const words = await h.database.db
      .selectFrom('search_vocab')
      .select(['word', 'docs'])
      .where('account_id', '=', racer.id)
      .where('docs', '>', 0)
      .execute();
    assert.deepEqual(words, [], 'every object is gone, so is every word it counted');
  });
});
