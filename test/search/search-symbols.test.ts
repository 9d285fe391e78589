import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { type Kysely, sql } from 'kysely';
import { foldBefore0015, up as migrate0015, refold } from '../../src/db/migrations/0015-symbol-words.ts';
import { foldText } from '../../src/search/text.ts';
import { describeEachDatabase, type TestAccount } from '../helpers/harness.ts';
import { createNotes, foundIds, search, vocabularyCount } from './corpus.ts';

// A symbol whose compatibility form holds letters (™ -> TM, ℃ -> °C) separates words and is no
// word itself, as every other symbol; it used to glue its letters onto the word before it
// (`windowstm`), so `windows` and the phrase "core i7" missed `Windows™` and `Core™ i7`.
describeEachDatabase('search: symbols that decompose to letters separate words', (h) => {
  let acc: TestAccount;
  const id: Record<string, string> = {};
  before(async () => {
    acc = await h.account('enterprise');
    const bodies = {
      laptop: {
        title: 'Windows™ laptop',
        content: 'Ships with an Intel® Core™ i7 and runs at 25℃ or less.',
        tags: ['Windows™'],
      },
      other: { title: 'Windows guide', content: 'Plain text without symbols.' },
      patched: { title: 'Office™ suite', content: 'Word™ and Excel™ together.' },
      deleted: { title: 'Teams™ notes', content: 'Teams™ call log.' },
    };
    Object.assign(id, await createNotes(h, acc, bodies));
  });

  const found = (q: string) => foundIds(h, acc.adminKey, q);
  const vocabulary = (word: string) => vocabularyCount(h, acc.id, word);

  describe('new writes', () => {
    it('finds the word before the symbol, in phrases too, and highlights it', async () => {
      assert.deepEqual(await found('windows'), [id.laptop, id.other].sort());
      assert.deepEqual(await found('"core i7"'), [id.laptop]);
      assert.deepEqual(await found('"windows laptop"'), [id.laptop]);
      assert.deepEqual(await found('tag:windows'), [id.laptop]);
      assert.deepEqual(await found('"at 25 or less"'), [id.laptop]);
      assert.deepEqual(await found('windowstm OR tm OR c'), [], 'no glued word, and no word of the symbol');
      const res = await search(h, acc.adminKey, { q: 'core' });
      assert.match(res.body.data.results[0].excerpt, /<em>Core<\/em>™ i7/);
    });

    it('a query with the symbol means the same words', async () => {
      assert.deepEqual(await found('Windows™'), [id.laptop, id.other].sort());
      assert.deepEqual(await found('"Core™ i7"'), [id.laptop]);
      assert.deepEqual(await found('title:"windows™ laptop"'), [id.laptop]);
    });
  });

  describe('migration 0015 on objects an older release indexed', () => {
    before(async () => {
      const db = h.database.db as unknown as Kysely<unknown>;
      // The entries as the folding before 0015 wrote them.
      assert.equal(await refold(db, h.dialect, 'test: back to the old folding', foldText, foldBefore0015), 3);
      assert.deepEqual(await found('windowstm'), [id.laptop], 'the old entry holds the glued word');
      assert.deepEqual(await found('"core i7"'), []);
      assert.deepEqual(await vocabulary('windowstm'), [1]);
      // A database from before 0015 has no record of it (this one ran it when it was created).
      await sql`DELETE FROM search_refold_progress WHERE name = '0015-symbol-words'`.execute(db);
      // A first run that stops after two batches of one object (a crash), then the migration runs
      // again from the start, as a restarted `ads migrate` would, and then once more.
      assert.equal(
        await refold(db, h.dialect, '0015-symbol-words', foldBefore0015, foldText, { batch: 1, batches: 2 }),
        2,
      );
      await migrate0015(db, h.dialect);
      await migrate0015(db, h.dialect);
    });

    it('resumes after a crash and does nothing once done: no entry is rewritten twice', async () => {
      const db = h.database.db as unknown as Kysely<unknown>;
      assert.equal(await refold(db, h.dialect, '0015-symbol-words', foldBefore0015, foldText), 0);
      const res = await search(h, acc.adminKey, { q: 'windows OR excel OR teams' });
      assert.equal(res.status, 200, res.raw);
      assert.equal(res.body.data.total, 4);
    });

    it('rewrites them: the words are found, the glued ones gone, the vocabulary moved', async () => {
      assert.deepEqual(await found('windows'), [id.laptop, id.other].sort());
      assert.deepEqual(await found('"core i7"'), [id.laptop]);
      assert.deepEqual(await found('windowstm'), []);
      assert.deepEqual(await vocabulary('windowstm'), []);
      assert.deepEqual(await vocabulary('windows'), [2]);
      assert.deepEqual(await vocabulary('tm'), []);
    });

    it('updates and deletes after it leave no stale words (the entry matched what was written)', async () => {
      const patched = await h.request('PATCH', `/v1/data/${id.patched}`, {
        key: acc.adminKey,
        body: { title: 'Office suite', content: 'Spreadsheets.' },
      });
      assert.equal(patched.status, 200, patched.raw);
      const deleted = await h.request('DELETE', `/v1/data/${id.deleted}`, { key: acc.adminKey });
      assert.equal(deleted.status, 204);
      for (const word of ['word', 'excel', 'teams', 'call', 'wordtm', 'exceltm', 'teamstm']) {
        assert.deepEqual(await vocabulary(word), [], word);
      }
      assert.deepEqual(await found('excel OR teams OR word OR teamstm'), []);
      assert.deepEqual(await found('office'), [id.patched]);
    });
  });
});
