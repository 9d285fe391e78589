import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { FTS_COLUMNS } from '../../src/search/compile-sqlite.ts';
import { describeEachDatabase, type TestAccount } from '../helpers/harness.ts';
import { search } from './corpus.ts';

describeEachDatabase('GET /search: tenancy and instant indexing', (h) => {
  let a: TestAccount;
  let b: TestAccount;
  before(async () => {
    a = await h.account('enterprise');
    b = await h.account('enterprise');
  });

  const create = async (acc: TestAccount, body: Record<string, unknown>) => {
    const res = await h.request('POST', '/v1/data', { key: acc.adminKey, body: { type: 'note', ...body } });
    assert.equal(res.status, 201, res.raw);
    return res.body.data.id as string;
  };
  const ids = async (acc: TestAccount, q: string, extra: Record<string, string> = {}) => {
    const res = await search(h, acc.adminKey, { q, limit: 100, ...extra });
    assert.equal(res.status, 200, res.raw);
    return { ids: res.body.data.results.map((r: { id: string }) => r.id) as string[], body: res.body };
  };
  /** Rows of the account's vocabulary holding `word` (0 once no object of the account has it). */
  const vocabulary = async (accountId: string, word: string) =>
    (
      await sql<{ docs: number }>`
        SELECT sum(docs) AS docs FROM search_vocab WHERE account_id = ${accountId} AND word = ${word}
        GROUP BY word`.execute(h.database.db)
    ).rows.map((r) => Number(r.docs));

  describe('cross-account isolation', () => {
    let aShared: string;
    let bShared: string;
    before(async () => {
      aShared = await create(a, {
        title: 'Sharedword alpha plan',
        content: 'The alphaonly secret of account A sits beside sharedword.',
        tags: ['sharedtag'],
        metadata: { author: 'Sharedword Author', status: 'sharedstatus' },
      });
      await create(a, { title: 'Another alphaonly note', content: 'sharedword again' });
      bShared = await create(b, { title: 'Beta plan', content: 'Account B mentions sharedword once.' });
    });

    it("B never sees A's objects in results, totals or excerpts", async () => {
      for (const q of [
        'sharedword',
        'shared*',
        '*aredwor*',
        'sharedword OR alphaonly',
        '"sharedword once"',
      ]) {
        const { ids: found, body } = await ids(b, q);
        assert.ok(!found.includes(aShared), `${q}: A's object leaked`);
        assert.equal(body.data.total, found.length, `${q}: total counts only B's objects`);
        assert.ok(!JSON.stringify(body).includes('alphaonly'), `${q}: A's text leaked`);
      }
      assert.deepEqual((await ids(b, 'sharedword')).ids, [bShared]);
      assert.deepEqual((await ids(a, 'sharedword')).ids.length, 2);
    });

    it("A's words, tags and metadata find nothing from B", async () => {
      for (const q of [
        'alphaonly',
        'alpha*',
        '*phaonl*',
        'tag:sharedtag',
        'author:sharedword',
        'status:sharedstatus',
      ]) {
        const { ids: found, body } = await ids(b, q);
        assert.deepEqual(found, [], q);
        assert.equal(body.data.total, 0, q);
      }
      for (const filter of ['tag:sharedtag', 'status:sharedstatus', 'author:Sharedword Author']) {
        const { ids: found } = await ids(b, 'sharedword', { filter });
        assert.deepEqual(found, [], filter);
      }
      assert.deepEqual((await ids(a, 'alpha*', { filter: 'tag:sharedtag' })).ids, [aShared]);
    });

    it("B's wildcards expand over B's vocabulary only", async () => {
      assert.deepEqual(await vocabulary(b.id, 'alphaonly'), []);
      assert.deepEqual(await vocabulary(a.id, 'alphaonly'), [2]);
    });
  });

  describe('visibility the moment a write returns', () => {
    it('a created object is found at once', async () => {
      const id = await create(a, { title: 'Freshly minted quokka', content: 'brand new words' });
      assert.deepEqual((await ids(a, 'quokka')).ids, [id]);
      assert.deepEqual((await ids(a, 'quok*')).ids, [id]);
      assert.deepEqual((await ids(a, '*okk*')).ids, [id]);
    });

    it('an update is found by its new words and no longer by the old ones', async () => {
      const id = await create(a, {
        title: 'Walrus memo',
        content: 'old body text',
        tags: ['oldtag'],
        metadata: { author: 'Oldname' },
      });
      const patch = await h.request('PATCH', `/v1/data/${id}`, {
        key: a.adminKey,
        body: {
          title: 'Narwhal memo',
          content: 'new body text',
          tags: ['newtag'],
          metadata: { author: 'Newname' },
        },
      });
      assert.equal(patch.status, 200, patch.raw);
      for (const q of ['narwhal', 'narw*', '*arwha*', 'tag:newtag', 'author:newname', '"new body"']) {
        assert.deepEqual((await ids(a, q)).ids, [id], q);
      }
      for (const q of ['walrus', 'walr*', '*alru*', 'tag:oldtag', 'author:oldname', '"old body"']) {
        assert.deepEqual((await ids(a, q)).ids, [], q);
      }
      assert.deepEqual(await vocabulary(a.id, 'walrus'), [], 'the old word left the vocabulary');
      assert.deepEqual(await vocabulary(a.id, 'memo'), [1], 'a kept word is counted once');
      const typed = await h.request('PATCH', `/v1/data/${id}`, { key: a.adminKey, body: { type: 'record' } });
      assert.equal(typed.status, 200);
      assert.deepEqual((await ids(a, 'narwhal type:record')).ids, [id]);
      assert.deepEqual((await ids(a, 'narwhal', { filter: 'type:note' })).ids, []);
    });

    it('a deleted object is gone from results, totals and the index the moment DELETE returns', async () => {
      const keep = await create(a, { title: 'Platypus keeper', content: 'platypus' });
      const id = await create(a, { title: 'Platypus doomed', content: 'uniqueaardvark platypus' });
      assert.equal((await ids(a, 'platypus')).body.data.total, 2);
      const del = await h.request('DELETE', `/v1/data/${id}`, { key: a.adminKey });
      assert.equal(del.status, 204);
      const after = await ids(a, 'platypus');
      assert.deepEqual(after.ids, [keep]);
      assert.equal(after.body.data.total, 1);
      for (const q of ['uniqueaardvark', 'uniqueaard*', '*aardvar*', 'doomed']) {
        assert.deepEqual((await ids(a, q)).ids, [], q);
      }
      assert.deepEqual(await vocabulary(a.id, 'uniqueaardvark'), []);
      assert.deepEqual(await vocabulary(a.id, 'platypus'), [1]);
      const rows = await sql<{ n: number }>`
        SELECT count(*) AS n FROM search_documents WHERE account_id = ${a.id} AND id = ${id}`.execute(
        h.database.db,
      );
      assert.equal(Number(rows.rows[0]!.n), 0);
    });

    it('a deleted object leaves no trace of its words in the index pages (SQLite secure-delete)', {
      skip: h.dialect !== 'sqlite' && 'FTS5 pages are SQLite only',
    }, async () => {
      const traces = async () =>
        Number(
          (
            await sql<{ n: number }>`
              SELECT count(*) AS n FROM search_fts_data WHERE instr(block, 'forensicmark') > 0`.execute(
              h.database.db,
            )
          ).rows[0]!.n,
        );
      const id = await create(a, { title: 'Trace test', content: 'zzqxforensicmarker once' });
      assert.ok((await traces()) > 0, 'the word is in the index before the delete');
      assert.equal((await h.request('DELETE', `/v1/data/${id}`, { key: a.adminKey })).status, 204);
      assert.equal(await traces(), 0);
    });

    it('the FTS5 table has the columns the compiler writes, in order', {
      skip: h.dialect !== 'sqlite' && 'FTS5 is SQLite only',
    }, async () => {
      const { rows } = await sql<{ name: string }>`SELECT name FROM pragma_table_info('search_fts')`.execute(
        h.database.db,
      );
      assert.deepEqual(
        rows.map((r) => r.name),
        [...FTS_COLUMNS],
      );
    });

    it('a failed delete (unknown id) changes nothing', async () => {
      const id = await create(a, { title: 'Wombat survivor', content: 'wombat' });
      const missing = `dat_${'0'.repeat(26)}`;
      const del = await h.request('DELETE', `/v1/data/${missing}`, { key: a.adminKey });
      assert.equal(del.status, 404);
      assert.deepEqual((await ids(a, 'wombat')).ids, [id]);
    });
  });

  describe('access', () => {
    it('needs a key with the read scope', async () => {
      const none = await h.request('GET', '/v1/search?q=x');
      assert.equal(none.status, 401);
      const writer = await a.user('member', ['write']);
      const denied = await h.request('GET', '/v1/search?q=x', { key: writer.key });
      assert.equal(denied.status, 403);
      const reader = await a.user('member', ['read']);
      const allowed = await h.request('GET', '/v1/search?q=x', { key: reader.key });
      assert.equal(allowed.status, 200);
    });
  });
});
