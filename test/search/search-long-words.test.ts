import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { type Kysely, sql } from 'kysely';
import { rewriteEntries } from '../../src/db/migrations/0015-symbol-words.ts';
import { up as migrate0025 } from '../../src/db/migrations/0025-long-word-breaks.ts';
import { buildIndexDocument } from '../../src/search/document.ts';
import { describeEachDatabase, type TestAccount } from '../helpers/harness.ts';
import { createNotes, foundIds, search, vocabularyCount } from './corpus.ts';

const HASH = 'A'.repeat(200);
const B129 = 'b'.repeat(129);
const C129 = 'c'.repeat(129);

// docs/search.md: a phrase finds "the words next to each other, in this order", and words over 128
// characters are not indexed. Left out with its neighbours joined, such a word made the words on
// either side of it adjacent, so phrases matched words that are apart in the text.
describeEachDatabase('search: a word too long to index still separates its neighbours', (h) => {
  let acc: TestAccount;
  const id: Record<string, string> = {};
  before(async () => {
    acc = await h.account('enterprise');
    Object.assign(
      id,
      await createNotes(h, acc, {
        log: { title: 'Session log', content: `the session token ${HASH} expired at noon` },
        meta: {
          title: `alpha ${B129} omega`,
          content: 'body',
          metadata: { description: `alpha ${C129} omega`, author: `left ${HASH} right` },
        },
        adjacent: { title: 'Adjacent', content: 'when the token expired we renewed it' },
      }),
    );
  });

  const found = (q: string) => foundIds(h, acc.adminKey, q);

  const phrasesAcrossLongWords = async () => {
    assert.deepEqual(await found('"token expired"'), [id.adjacent]);
    assert.deepEqual(await found('title:"alpha omega"'), []);
    assert.deepEqual(await found('description:"alpha omega"'), []);
    assert.deepEqual(await found('"alpha omega"'), []);
    assert.deepEqual(await found('author:"left right"'), []);
  };

  it('a phrase does not span an overlong word, in any field', phrasesAcrossLongWords);

  it('the words around it are still found, alone and in phrases on their own side', async () => {
    assert.deepEqual(await found('token expired'), [id.adjacent, id.log].sort());
    assert.deepEqual(await found('"session token"'), [id.log]);
    assert.deepEqual(await found('"expired at noon"'), [id.log]);
    assert.deepEqual(await found('title:alpha title:omega'), [id.meta]);
  });

  it('an exact metadata filter on a value with an overlong word still finds it', async () => {
    for (const filter of [`author:left ${HASH} right`, `metadata.description:alpha ${C129} omega`]) {
      const res = await search(h, acc.adminKey, { q: 'body', filter });
      assert.equal(res.status, 200, res.raw);
      assert.deepEqual(
        res.body.data.results.map((r: { id: string }) => r.id),
        [id.meta],
        filter.slice(0, 20),
      );
    }
  });

  describe('migration 0025 on entries an older release wrote', () => {
    const db = () => h.database.db as unknown as Kysely<unknown>;
    before(async () => {
      // The entries as releases before 0025 wrote them: the words around an overlong one joined.
      const back = await rewriteEntries(db(), h.dialect, 'test: back to joined words', sql`true`, (row) => {
        const old = buildIndexDocument(row, undefined, 'break');
        const next = buildIndexDocument(row, undefined, 'join');
        return JSON.stringify(old.fields) === JSON.stringify(next.fields) ? null : { old, next };
      });
      assert.equal(back, 2, 'two entries differ: the log and the meta object');
      assert.deepEqual(await found('"token expired"'), [id.adjacent, id.log].sort(), 'the old fault');
      // A database from before 0025 has no record of it (this one ran it when it was created).
      await sql`DELETE FROM search_refold_progress WHERE name = '0025-long-word-breaks'`.execute(db());
      await sql`DELETE FROM schema_breaks WHERE name = '0025-long-word-breaks'`.execute(db());
      // Stopped after its first batch (as a kill would): the break is already on record.
      const stop = () => {
        throw new Error('stopped after a batch');
      };
      await assert.rejects(migrate0025(db(), h.dialect, stop), /stopped after a batch/);
      const { rows } = await sql<{ name: string }>`SELECT name FROM schema_breaks`.execute(db());
      breaksAfterOneBatch = rows.map((r) => r.name);
      await migrate0025(db(), h.dialect);
      await migrate0025(db(), h.dialect);
    });
    let breaksAfterOneBatch: string[] = [];

    it('rewrites them: phrases no longer span the overlong words', phrasesAcrossLongWords);

    it('records a schema break, so an earlier release that knows them refuses this schema', async () => {
      const { rows } = await sql<{ name: string }>`SELECT name FROM schema_breaks`.execute(db());
      assert.ok(rows.some((r) => r.name === '0025-long-word-breaks'));
      // Before its first rewritten entry commits, not at its end.
      assert.ok(breaksAfterOneBatch.includes('0025-long-word-breaks'), String(breaksAfterOneBatch));
    });

    it('updates and deletes after it leave no stale words (the entry matched what was written)', async () => {
      const patched = await h.request('PATCH', `/v1/data/${id.log}`, {
        key: acc.adminKey,
        body: { content: 'rotated' },
      });
      assert.equal(patched.status, 200, patched.raw);
      const deleted = await h.request('DELETE', `/v1/data/${id.meta}`, { key: acc.adminKey });
      assert.equal(deleted.status, 204);
      for (const word of ['noon', 'alpha', 'omega', 'left', 'right']) {
        assert.deepEqual(await vocabularyCount(h, acc.id, word), [], word);
      }
      assert.deepEqual(await found('rotated'), [id.log]);
      assert.deepEqual(await found('noon OR alpha OR left'), []);
      if (h.dialect === 'sqlite') {
        await sql`INSERT INTO search_fts (search_fts, rank) VALUES ('integrity-check', 0)`.execute(db());
      }
    });
  });
});

// docs/search.md counts characters as code points: "Words longer than 128 characters are not
// indexed". A word of characters outside the BMP was measured in UTF-16 units, so one of 70
// characters (140 units) was left out of the index, and not highlighted.
describeEachDatabase('search: a word of up to 128 characters outside the BMP is indexed', (h) => {
  let acc: TestAccount;
  const id: Record<string, string> = {};
  before(async () => {
    acc = await h.account('enterprise');
    Object.assign(
      id,
      await createNotes(h, acc, {
        fits: { title: 'Astral word', content: `before ${'𠀀'.repeat(128)} after` },
        over: { title: 'Too long', content: `before ${'𠀁'.repeat(129)} after` },
      }),
    );
  });

  const found = (q: string) => foundIds(h, acc.adminKey, q);

  it('is found, whole or by prefix, and highlighted; one of 129 is not', async () => {
    assert.deepEqual(await found('𠀀'.repeat(128)), [id.fits]);
    assert.deepEqual(await found('𠀀*'), [id.fits]);
    assert.deepEqual(await found(`"before ${'𠀀'.repeat(128)} after"`), [id.fits]);
    assert.deepEqual(await found('𠀁*'), []);
    assert.deepEqual(await found('"before after"'), [], 'the word of 129 still separates its neighbours');
    const res = await search(h, acc.adminKey, { q: '𠀀*' });
    assert.match(res.body.data.results[0].excerpt, /^before <em>𠀀+…𠀀+<\/em> after$/u);
  });
});
