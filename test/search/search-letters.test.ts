import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { type Kysely, sql } from 'kysely';
import { foldAfter0015, refold } from '../../src/db/migrations/0015-symbol-words.ts';
import { up as migrate0016 } from '../../src/db/migrations/0016-stroked-letters.ts';
import { foldText } from '../../src/search/text.ts';
import { describeEachDatabase, type TestAccount } from '../helpers/harness.ts';
import { createNotes, foundIds, search, vocabularyCount } from './corpus.ts';

// Letters with a stroke and ligatures (ß, æ, œ, ø, ł, đ, ð, þ, ħ, ı, ŧ) have no decomposition, so
// accent folding (NFKD, marks removed) left them whole: `strasse` missed `Straße`, `lodz` missed
// `Łódź`. They now fold to their base letters, in documents, queries and excerpts alike.
describeEachDatabase('search: letters with strokes and ligatures fold to their base letters', (h) => {
  let acc: TestAccount;
  const id: Record<string, string> = {};
  before(async () => {
    acc = await h.account('enterprise');
    const bodies = {
      street: {
        title: 'Hauptstraße 5',
        content: 'The office on the STRASSE side of Łódź, near the Øresund ferry.',
        tags: ['Æsir', 'København'],
        metadata: { author: 'Jørgen Þórsson' },
      },
      plain: { title: 'Strasse guide', content: 'Lodz and Oresund without special letters.' },
      patched: { title: 'Œuvre complète', content: 'Đorđe and Ħal Far.' },
      deleted: { title: 'Kraków notes', content: 'Wałęsa speech.' },
    };
    Object.assign(id, await createNotes(h, acc, bodies));
  });

  const found = (q: string) => foundIds(h, acc.adminKey, q);
  const vocabulary = (word: string) => vocabularyCount(h, acc.id, word);
  const both = () => [id.street, id.plain].sort();

  describe('new writes', () => {
    it('finds them by their base letters, in every field, phrases and wildcards included', async () => {
      assert.deepEqual(await found('hauptstrasse'), [id.street]);
      assert.deepEqual(await found('strasse'), both());
      assert.deepEqual(await found('lodz'), both());
      assert.deepEqual(await found('"of lodz near the oresund"'), [id.street]);
      assert.deepEqual(await found('tag:aesir'), [id.street]);
      assert.deepEqual(await found('tag:kobenhavn'), [id.street]);
      assert.deepEqual(await found('author:"jorgen thorsson"'), [id.street]);
      assert.deepEqual(await found('oeuvre AND dorde AND hal'), [id.patched]);
      assert.deepEqual(await found('haupt*'), [id.street]);
      assert.deepEqual(await found('*strass*'), both());
    });

    it('a query written with those letters means the same words', async () => {
      assert.deepEqual(await found('Straße'), both());
      assert.deepEqual(await found('ŁÓDŹ'), both());
      assert.deepEqual(await found('"Øresund ferry"'), [id.street]);
      assert.deepEqual(await found('tag:æsir'), [id.street]);
      assert.deepEqual(await found('HAUPTSTRAẞE'), [id.street]);
    });

    it('highlights the word as written', async () => {
      const res = await search(h, acc.adminKey, { q: 'lodz', sort: 'date', order: 'asc' });
      assert.match(res.body.data.results[0].excerpt, /<em>Łódź<\/em>, near/);
      const title = await search(h, acc.adminKey, { q: 'title:hauptstrasse' });
      assert.match(title.body.data.results[0].excerpt, /<em>Hauptstraße<\/em>/);
    });
  });

  describe('migration 0016 on objects an older release indexed', () => {
    before(async () => {
      const db = h.database.db as unknown as Kysely<unknown>;
      // The entries as the folding before 0016 wrote them (plain has nothing to rewrite).
      assert.equal(await refold(db, h.dialect, 'test: back to the 0015 folding', foldText, foldAfter0015), 3);
      assert.deepEqual(await found('hauptstrasse'), []);
      assert.deepEqual(await found('lodz'), [id.plain], 'the old entry holds the letters unfolded');
      assert.deepEqual(await vocabulary('łodz'), [1]);
      // A database from before 0016 has no record of it (this one ran it when it was created).
      await sql`DELETE FROM search_refold_progress WHERE name = '0016-stroked-letters'`.execute(db);
      // Two batches of one object, a crash, then the migration from the start, twice.
      assert.equal(
        await refold(db, h.dialect, '0016-stroked-letters', foldAfter0015, foldText, {
          batch: 1,
          batches: 2,
        }),
        2,
      );
      await migrate0016(db, h.dialect);
      await migrate0016(db, h.dialect);
      assert.equal(await refold(db, h.dialect, '0016-stroked-letters', foldAfter0015, foldText), 0);
    });

    it('rewrites them: found by base letters, the old words gone from the vocabulary', async () => {
      assert.deepEqual(await found('hauptstrasse'), [id.street]);
      assert.deepEqual(await found('lodz'), both());
      assert.deepEqual(await found('"of lodz near the oresund"'), [id.street]);
      assert.deepEqual(await vocabulary('łodz'), []);
      assert.deepEqual(await vocabulary('lodz'), [2]);
      assert.deepEqual(await vocabulary('hauptstraße'), []);
    });

    it('updates and deletes after it leave no stale words (the entry matched what was written)', async () => {
      const patched = await h.request('PATCH', `/v1/data/${id.patched}`, {
        key: acc.adminKey,
        body: { title: 'Works', content: 'Nothing else.' },
      });
      assert.equal(patched.status, 200, patched.raw);
      const deleted = await h.request('DELETE', `/v1/data/${id.deleted}`, { key: acc.adminKey });
      assert.equal(deleted.status, 204);
      for (const word of ['oeuvre', 'dorde', 'hal', 'krakow', 'walesa', 'œuvre', 'đorđe', 'wałesa']) {
        assert.deepEqual(await vocabulary(word), [], word);
      }
      assert.deepEqual(await found('oeuvre OR krakow OR walesa OR speech'), []);
      assert.deepEqual(await found('works'), [id.patched]);
    });
  });
});
