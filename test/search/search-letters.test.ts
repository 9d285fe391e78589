import assert from 'node:assert/strict';
import { before, describe, it, test } from 'node:test';
import { type Kysely, sql } from 'kysely';
import { foldAfter0015, refold, rewriteEntries } from '../../src/db/migrations/0015-symbol-words.ts';
import { up as migrate0016 } from '../../src/db/migrations/0016-stroked-letters.ts';
import {
  AFFECTED_CHAR,
  fitsBefore0026,
  foldBefore0026,
  up as migrate0026,
} from '../../src/db/migrations/0026-word-folding.ts';
import { buildIndexDocument } from '../../src/search/document.ts';
import { foldText, splitWords } from '../../src/search/text.ts';
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

// docs/search.md: matching ignores case and accents. Folding removed every combining mark, so the
// vowel signs of Indic scripts (and Thai marks, the kana voicing mark) went too and different words
// matched (`काम` "work" found `कम` "less"); and lower-casing a whole text turned `Σ` into `σ` or `ς`
// by context while a query word alone got `ς`, so `ΝΟΜΟΣ` missed `ΝΟΜΟΣ:ΑΤΤΙΚΗ`. Accents are
// removed, a script's own marks kept, and `ς` is `σ`, in documents, queries and excerpts alike.
describeEachDatabase('search: accents fold, script marks do not; Greek sigma', (h) => {
  let acc: TestAccount;
  const id: Record<string, string> = {};
  const ASTRAL = '𠀀'.repeat(70);
  before(async () => {
    acc = await h.account('enterprise');
    const bodies = {
      greekColon: { title: 'Greek form', content: 'ΝΟΜΟΣ:ΑΤΤΙΚΗ' },
      greekSpace: { title: 'Greek plain', content: 'ΝΟΜΟΣ ΑΤΤΙΚΗ, Αθήνα' },
      less: { title: 'Hindi less', content: 'कम' },
      work: { title: 'Hindi work', content: 'यह काम है' },
      kana: { title: 'Kana', content: 'かき と がき' },
      // 70 characters outside the BMP: one word of 140 UTF-16 units (docs: 128 characters).
      astral: { title: 'Astral word', content: `before ${ASTRAL} after` },
      deleted: { title: 'Thai', content: 'ไม้ ไม' },
      // Pointed Arabic and Hebrew: their vowel points are optional, and most text leaves them out.
      arabic: { title: 'Arabic', content: 'كَتَبَ الوَلَدُ' },
      hebrew: { title: 'Hebrew', content: 'שָׁלוֹם עוֹלָם' },
    };
    Object.assign(id, await createNotes(h, acc, bodies));
  });

  const found = (q: string) => foundIds(h, acc.adminKey, q);
  const vocabulary = (word: string) => vocabularyCount(h, acc.id, word);
  const greek = () => [id.greekColon, id.greekSpace].sort();

  const foldingHolds = async () => {
    assert.deepEqual(await found('ΝΟΜΟΣ'), greek());
    assert.deepEqual(await found('νομος'), greek());
    assert.deepEqual(await found('νομοσ'), greek());
    assert.deepEqual(await found('"νομος αττικη"'), greek());
    assert.deepEqual(await found('काम'), [id.work]);
    assert.deepEqual(await found('कम'), [id.less]);
    assert.deepEqual(await found('"यह काम"'), [id.work]);
    assert.deepEqual(await found('का*'), [id.work]);
    assert.deepEqual(await found('がき'), [id.kana]);
    assert.deepEqual(await found(ASTRAL), [id.astral]);
    assert.deepEqual(await found('𠀀*'), [id.astral]);
  };

  it('a word with a script mark is another word than without it; final sigma is sigma', foldingHolds);

  it('accents are still removed (Greek tonos), and a query holding them means the same words', async () => {
    assert.deepEqual(await found('ΑΘΗΝΑ'), [id.greekSpace]);
    assert.deepEqual(await found('αθηνα'), [id.greekSpace]);
    assert.deepEqual(await found('Αθήνα'), [id.greekSpace]);
    // Hebrew and Arabic vowel points are accents too: found without them, and with them.
    assert.deepEqual(await found('كتب'), [id.arabic]);
    assert.deepEqual(await found('"كتب الولد"'), [id.arabic]);
    assert.deepEqual(await found('كَتَبَ'), [id.arabic]);
    assert.deepEqual(await found('שלום'), [id.hebrew]);
    assert.deepEqual(await found('שָׁלוֹם'), [id.hebrew]);
    const pointed = await search(h, acc.adminKey, { q: 'שלום' });
    assert.equal(pointed.body.data.results[0].excerpt, '<em>שָׁלוֹם</em> עוֹלָם');
  });

  it('highlights the whole word, marks included, and a Σ written either way', async () => {
    const hindi = await search(h, acc.adminKey, { q: 'काम' });
    assert.equal(hindi.body.data.results[0].excerpt, 'यह <em>काम</em> है');
    const colon = await search(h, acc.adminKey, { q: 'content:νομος', sort: 'date', order: 'asc' });
    assert.deepEqual(
      colon.body.data.results.map((r: { excerpt: string }) => r.excerpt),
      ['<em>ΝΟΜΟΣ</em>:ΑΤΤΙΚΗ', '<em>ΝΟΜΟΣ</em> ΑΤΤΙΚΗ, Αθήνα'],
    );
  });

  describe('migration 0026 on objects an older release indexed', () => {
    const db = () => h.database.db as unknown as Kysely<unknown>;
    const before0026 = (row: Parameters<typeof buildIndexDocument>[0]) =>
      buildIndexDocument(row, foldBefore0026, 'break', fitsBefore0026);
    let breaksAfterOneBatch: string[] = [];
    before(async () => {
      // The entries as releases before 0026 wrote them.
      const back = await rewriteEntries(db(), h.dialect, 'test: back to the 0025 words', sql`true`, (row) => {
        const old = buildIndexDocument(row);
        const next = before0026(row);
        return JSON.stringify(old.fields) === JSON.stringify(next.fields) ? null : { old, next };
      });
      // Not greekColon (its Σ lower-cased to σ either way) nor less (कम holds no mark).
      assert.equal(back, 5);
      assert.deepEqual(await found('कम'), [id.less, id.work].sort(), 'the old entry holds कम for काम');
      assert.deepEqual(await found('काम'), []);
      assert.deepEqual(await found('ΝΟΜΟΣ'), [id.greekColon], 'the old entry holds νομος');
      assert.deepEqual(await found(ASTRAL), [], 'the old fault');
      assert.deepEqual(await vocabulary('कम'), [2]);
      // A database from before 0026 has no record of it (this one ran it when it was created).
      await sql`DELETE FROM search_refold_progress WHERE name = '0026-word-folding'`.execute(db());
      await sql`DELETE FROM schema_breaks WHERE name = '0026-word-folding'`.execute(db());
      // Stopped after its first batch (as a kill would): the break is already on record.
      const stop = () => {
        throw new Error('stopped after a batch');
      };
      await assert.rejects(migrate0026(db(), h.dialect, stop), /stopped after a batch/);
      const { rows } = await sql<{ name: string }>`SELECT name FROM schema_breaks`.execute(db());
      breaksAfterOneBatch = rows.map((r) => r.name);
      await migrate0026(db(), h.dialect);
      await migrate0026(db(), h.dialect);
    });

    it('rewrites them: found as new entries are, the old words gone from the vocabulary', async () => {
      await foldingHolds();
      assert.deepEqual(await vocabulary('कम'), [1]);
      assert.deepEqual(await vocabulary('νομοσ'), [2]);
      assert.deepEqual(await vocabulary('νομος'), []);
      assert.deepEqual(await vocabulary('कि'), []);
    });

    // docs/deployment.md: a migration that rewrites entries reports progress every 5 seconds. 0026
    // selects by a character test that reads every row and matches few: without a window, its
    // first batch scanned the whole table (minutes at 1M objects) before it reported anything.
    it('reads the table in windows, reporting each, and still finds every selected object', async () => {
      const { rows } = await sql<{ n: number }>`SELECT count(*) AS n FROM data_objects`.execute(db());
      const objects = Number(rows[0]?.n);
      assert.ok(objects >= 8, `${objects} objects`);
      const seen: string[] = [];
      let reports = 0;
      await rewriteEntries(
        db(),
        h.dialect,
        'test: windows',
        sql`title IN ('Hindi work', 'Greek form', 'Astral word')`,
        (row) => {
          seen.push(row.title);
          return null;
        },
        { batch: 2, scanRows: 3, onBatch: () => reports++ },
      );
      assert.deepEqual(seen.sort(), ['Astral word', 'Greek form', 'Hindi work']);
      assert.equal(reports, Math.floor(objects / 3) + 1, 'one report per window of 3 objects');
    });

    it('records a schema break before its first batch', () => {
      assert.ok(breaksAfterOneBatch.includes('0026-word-folding'), String(breaksAfterOneBatch));
    });

    it('updates and deletes after it leave no stale words (the entry matched what was written)', async () => {
      const patched = await h.request('PATCH', `/v1/data/${id.work}`, {
        key: acc.adminKey,
        body: { content: 'rewritten' },
      });
      assert.equal(patched.status, 200, patched.raw);
      for (const name of ['deleted', 'astral']) {
        const deleted = await h.request('DELETE', `/v1/data/${id[name]}`, { key: acc.adminKey });
        assert.equal(deleted.status, 204);
      }
      for (const word of ['काम', 'यह', 'ไม้', 'ไม', 'มไ', ASTRAL.toLowerCase(), 'before']) {
        assert.deepEqual(await vocabulary(word), [], word);
      }
      assert.deepEqual(await found('काम OR यह OR ไม้ OR ไม OR before'), []);
      assert.deepEqual(await found('rewritten'), [id.work]);
      if (h.dialect === 'sqlite') {
        await sql`INSERT INTO search_fts (search_fts, rank) VALUES ('integrity-check', 0)`.execute(db());
      }
    });
  });
});

test('migration 0026 reads every object whose words it can change (AFFECTED holds them)', () => {
  // A text's words change only through a character whose folding keeps a mark, gives a sigma, or
  // lies outside the BMP (counted as one character now, two before).
  for (let cp = 0x80; cp <= 0xffff; cp++) {
    if (cp >= 0xd800 && cp <= 0xdfff) continue;
    const c = String.fromCodePoint(cp);
    const folded = foldText(c);
    if (/\p{M}|σ/u.test(folded)) assert.ok(AFFECTED_CHAR.test(c), `U+${cp.toString(16)}`);
    else assert.equal(folded, foldBefore0026(c), `U+${cp.toString(16)}`);
  }
  assert.ok(AFFECTED_CHAR.test('𠀀'));
  // Words of a text without them are the same either way.
  const text = 'Crème brûlée, Straße, Łódź, Москва, 北京, 서울, ™ ½ “quoted” — Ça ﬁnit';
  assert.ok(!AFFECTED_CHAR.test(text));
  assert.deepEqual(splitWords(foldText(text)), splitWords(foldBefore0026(text)));
});
