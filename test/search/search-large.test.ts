import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import { describeEachDatabase, type TestAccount } from '../helpers/harness.ts';
import { search } from './corpus.ts';

describeEachDatabase('GET /search: large objects', (h) => {
  let acc: TestAccount;
  let id: string;
  before(async () => {
    acc = await h.account('enterprise');
    // ~0.7 MB of distinct words, about 2.5 MB as lexemes: more than a PostgreSQL tsvector can hold.
    // (Three times as many took 15-20 s here on SQLite, nearly all of it in taking the words out of
    // the vocabulary's trigram index on the PATCH below: docs/search.md, "Indexing cost".)
    const words = Array.from({ length: 100_000 }, (_, i) => `w${i.toString(36)}q`);
    const res = await h.request('POST', '/v1/data', {
      key: acc.adminKey,
      body: { title: 'Enormous ledger', type: 'record', content: `opening ${words.join(' ')} closing` },
    });
    assert.equal(res.status, 201, res.raw.slice(0, 500));
    id = res.body.data.id;
  });

  it('an excerpt that reaches the end of the scanned part ends with … when the content goes on', async () => {
    // The only `quokka` ends 7 characters before character 200,000 (the scanned part), which falls
    // in a space; the content goes on for 100,000 characters.
    const res = await h.request('POST', '/v1/data', {
      key: acc.adminKey,
      body: { title: 'Long', type: 'note', content: `${'x '.repeat(99_990)}quokka ${'y '.repeat(50_000)}` },
    });
    assert.equal(res.status, 201, res.raw.slice(0, 300));
    const found = await search(h, acc.adminKey, { q: 'quokka' });
    assert.equal(found.status, 200, found.raw.slice(0, 300));
    assert.equal(found.body.data.results[0].excerpt, `…${'x '.repeat(22)}<em>quokka</em>${' y'.repeat(7)}…`);
  });

  it('is indexed and found by its title and its first words, with a short excerpt', async () => {
    for (const q of ['enormous', 'opening', 'w0q', '"opening w0q"', 'w1*']) {
      const res = await search(h, acc.adminKey, { q });
      assert.equal(res.status, 200);
      assert.deepEqual(
        res.body.data.results.map((r: { id: string }) => r.id),
        [id],
        q,
      );
      assert.ok(res.body.data.results[0].excerpt.length < 1000, 'the excerpt stays short');
    }
  });

  it('is indexed to its end on SQLite, up to the tsvector budget on PostgreSQL (docs/search.md)', async () => {
    const res = await search(h, acc.adminKey, { q: 'closing' });
    assert.equal(res.status, 200);
    assert.equal(res.body.data.total, h.dialect === 'sqlite' ? 1 : 0);
  });

  it('finds no phrase whose words are apart in the text, however long the text (PostgreSQL positions)', async () => {
    // PostgreSQL positions stop at 16383; a word there must not count as next to an earlier one.
    const filler = Array.from({ length: 16_300 }, (_, i) => `f${i % 5000}x`).join(' ');
    const res = await h.request('POST', '/v1/data', {
      key: acc.adminKey,
      body: {
        title: 'Long minutes',
        type: 'document',
        content: `${filler} ${'gammaqx '.repeat(100)}${'zzzqx '.repeat(50)}deltaqx end`,
      },
    });
    assert.equal(res.status, 201, res.raw.slice(0, 300));
    assert.equal((await search(h, acc.adminKey, { q: 'gammaqx deltaqx' })).body.data.total, 1);
    assert.equal((await search(h, acc.adminKey, { q: '"gammaqx deltaqx"' })).body.data.total, 0);
    assert.equal(
      (await search(h, acc.adminKey, { q: '"zzzqx deltaqx"' })).body.data.total,
      h.dialect === 'sqlite' ? 1 : 0,
    );
  });

  it('can be updated and deleted with its index entry', async () => {
    const patch = await h.request('PATCH', `/v1/data/${id}`, {
      key: acc.adminKey,
      body: { content: 'tiny now' },
    });
    assert.equal(patch.status, 200);
    assert.equal((await search(h, acc.adminKey, { q: 'opening' })).body.data.total, 0);
    assert.equal((await search(h, acc.adminKey, { q: 'tiny' })).body.data.total, 1);
    const del = await h.request('DELETE', `/v1/data/${id}`, { key: acc.adminKey });
    assert.equal(del.status, 204);
    assert.equal((await search(h, acc.adminKey, { q: 'enormous' })).body.data.total, 0);
  });
});
