import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import BetterSqlite3 from 'better-sqlite3';
import { sql } from 'kysely';
import { type Database, migrate, openDatabase } from '../../src/db/database.ts';
import { asBatch, beforeCommit, groupCommit, inBatch, MAX_BATCH } from '../../src/db/group-commit.ts';
import type { Db } from '../../src/db/types.ts';
import { holdWritesPerTurn } from '../../src/lib/held-writes.ts';
import { insertDataObject } from '../../src/modules/data/repo.ts';
import { indexDataObject } from '../../src/search/search-index.ts';
import { describeEachDatabase } from '../helpers/harness.ts';
import { dataRow } from '../helpers/rows.ts';
import { dispatched, loopbackPair } from '../helpers/sockets.ts';

/** A scratch table on a migrated SQLite file, written through `groupCommit`. */
describe('group commit (SQLite)', () => {
  let dir: string;
  let database: Database;
  let write: ReturnType<typeof groupCommit>;
  const file = () => path.join(dir, 'ads.sqlite');
  const rows = async () =>
    (await sql<{ v: string }>`SELECT v FROM gc_probe ORDER BY v`.execute(database.db)).rows.map((r) => r.v);
  const put = (v: string) => (trx: Db) => sql`INSERT INTO gc_probe (v) VALUES (${v})`.execute(trx);

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ads-gc-'));
    database = openDatabase({ dialect: 'sqlite', file: file() });
    await migrate(database);
    await sql`CREATE TABLE gc_probe (v TEXT PRIMARY KEY)`.execute(database.db);
    write = groupCommit(database.db);
  });
  after(async () => {
    await database.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('sends the writes held in its turn (finished answers) before its transaction and COMMIT', async () => {
    const pair = await loopbackPair();
    try {
      let sentBefore = -1;
      // Queued first, so the group runs before the turn's end would release the held answer.
      const written = write(async (trx) => {
        sentBefore = dispatched(pair.server);
        await put('held')(trx);
      });
      holdWritesPerTurn(pair.server, 60_000);
      pair.server.write('answer');
      assert.equal(dispatched(pair.server), 0, 'precondition: the answer is held');
      await written;
      assert.equal(sentBefore, 6);
    } finally {
      pair.close();
    }
  });

  it("sends its writes' answers in the turn it commits them, not a turn later", async () => {
    const pair = await loopbackPair();
    try {
      holdWritesPerTurn(pair.server, 60_000);
      // The caller answers once its write has committed, as a route does.
      await write(put('answered')).then(() => pair.server.write('answer'));
      // Still within the group's turn: a tick queued now runs after the group's own ticks.
      await new Promise((resolve) => process.nextTick(resolve));
      assert.equal(dispatched(pair.server), 6);
    } finally {
      pair.close();
    }
  });

  it('runs the writes queued in one event-loop turn in one transaction', async () => {
    await sql`DELETE FROM gc_probe`.execute(database.db);
    const seen: Db[] = [];
    const writes = Array.from({ length: 10 }, (_, i) =>
      write(async (trx) => {
        seen.push(trx);
        assert.equal(inBatch(trx), true);
        await put(`a${i}`)(trx);
        return i;
      }),
    );
    assert.deepEqual(await Promise.all(writes), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    assert.equal(new Set(seen).size, 1, 'one shared transaction');
    assert.equal((await rows()).length, 10);
  });

  it(`puts at most ${MAX_BATCH} writes in one transaction`, async () => {
    await sql`DELETE FROM gc_probe`.execute(database.db);
    const seen: Db[] = [];
    await Promise.all(
      Array.from({ length: MAX_BATCH * 2 + 1 }, (_, i) =>
        write(async (trx) => {
          seen.push(trx);
          await put(`b${i}`)(trx);
        }),
      ),
    );
    const sizes = [...new Set(seen)].map((t) => seen.filter((s) => s === t).length);
    assert.deepEqual(sizes, [MAX_BATCH, MAX_BATCH, 1]);
    assert.equal((await rows()).length, MAX_BATCH * 2 + 1);
  });

  it('acknowledges a write only once another connection can read it', async () => {
    await sql`DELETE FROM gc_probe`.execute(database.db);
    const reader = new BetterSqlite3(file(), { readonly: true });
    try {
      const results = await Promise.all(
        ['c1', 'c2', 'c3'].map((v) =>
          write(put(v)).then(() => reader.prepare('SELECT count(*) AS n FROM gc_probe WHERE v = ?').get(v)),
        ),
      );
      assert.deepEqual(results, [{ n: 1 }, { n: 1 }, { n: 1 }]);
    } finally {
      reader.close();
    }
  });

  it('gives a failing write its own error and commits the rest of its batch without it', async () => {
    await sql`DELETE FROM gc_probe`.execute(database.db);
    const outcomes = await Promise.allSettled([
      write(put('d1')),
      write(async (trx) => {
        await put('d-half')(trx);
        throw new Error('refused');
      }),
      write(put('d2')),
      // A constraint violation half-way through the batch.
      write(put('d1')),
      write(put('d3')),
    ]);
    assert.deepEqual(
      outcomes.map((o) => o.status),
      ['fulfilled', 'rejected', 'fulfilled', 'rejected', 'fulfilled'],
    );
    assert.equal((outcomes[1] as PromiseRejectedResult).reason.message, 'refused');
    assert.match(String((outcomes[3] as PromiseRejectedResult).reason.code), /SQLITE_CONSTRAINT/);
    assert.deepEqual(await rows(), ['d1', 'd2', 'd3'], 'no half-written write, none lost');
  });

  it('runs deferred work once per batch before its commit, and again per write after a failed batch', async () => {
    await sql`DELETE FROM gc_probe`.execute(database.db);
    let flushes = 0;
    const deferred = (v: string) => async (trx: Db) => {
      await put(v)(trx);
      await beforeCommit(trx, 'probe', async (t) => {
        flushes++;
        await sql`INSERT INTO gc_probe (v) VALUES (${`flush${flushes}`})`.execute(t);
      });
    };
    await Promise.all(['e1', 'e2', 'e3'].map((v) => write(deferred(v))));
    assert.equal(flushes, 1, 'registrations under one key share one flush');
    assert.deepEqual(await rows(), ['e1', 'e2', 'e3', 'flush1']);

    // A flush that fails rolls the whole batch back; each write then runs alone, where
    // beforeCommit runs at once.
    await sql`DELETE FROM gc_probe`.execute(database.db);
    flushes = 0;
    let failOnce = true;
    const outcomes = await Promise.allSettled(
      ['f1', 'f2'].map((v) =>
        write(async (trx) => {
          await put(v)(trx);
          await beforeCommit(trx, 'probe', async () => {
            flushes++;
            if (failOnce) {
              failOnce = false;
              throw new Error('flush failed');
            }
          });
        }),
      ),
    );
    assert.deepEqual(
      outcomes.map((o) => o.status),
      ['fulfilled', 'fulfilled'],
    );
    assert.equal(flushes, 3, 'one failed batch flush, then one per write run alone');
    assert.deepEqual(await rows(), ['f1', 'f2']);
  });
});

describeEachDatabase('group commit through the API', (h) => {
  it('concurrent creates, patches and deletes each get their own outcome; index and counts stay exact', async () => {
    const acc = await h.account('enterprise');
    const key = acc.adminKey;
    const seeded = await h.request('POST', '/v1/data', {
      key,
      body: { title: 'Kept zephyrine', type: 'note', content: 'zephyrine kept' },
    });
    assert.equal(seeded.status, 201);
    const doomed = await h.request('POST', '/v1/data', {
      key,
      body: { title: 'Doomed zephyrine', type: 'note', content: 'zephyrine doomed' },
    });
    const requests = [
      ...Array.from({ length: 12 }, (_, i) =>
        h.request('POST', '/v1/data', {
          key,
          body: { title: `Batch ${i}`, type: 'note', content: `zephyrine quokkafish${i} shared words` },
        }),
      ),
      h.request('PATCH', '/v1/data/dat_01JD0000000000000000000000', { key, body: { title: 'missing' } }),
      h.request('DELETE', `/v1/data/${doomed.body.data.id}`, { key }),
      h.request('DELETE', '/v1/data/dat_01JD0000000000000000000000', { key }),
      h.request('PATCH', `/v1/data/${seeded.body.data.id}`, { key, body: { content: 'zephyrine patched' } }),
    ];
    const res = await Promise.all(requests);
    assert.deepEqual(
      res.map((r) => r.status),
      [...Array(12).fill(201), 404, 204, 404, 200],
    );
    const ids = new Set(res.slice(0, 12).map((r) => r.body.data.id));
    assert.equal(ids.size, 12);

    const found = await h.request('GET', '/v1/search?q=zephyrine&limit=100', { key });
    assert.equal(found.body.data.total, 13, 'the 12 new objects and the patched one, not the deleted one');
    const list = await h.request('GET', '/v1/data?limit=1', { key });
    assert.equal(list.body.meta.total, 13);
    for (let i = 0; i < 12; i++) {
      const one = await h.request('GET', `/v1/search?q=quokkafish${i}`, { key });
      assert.equal(one.body.data.total, 1);
    }
    const infix = await h.request('GET', '/v1/search?q=*kkafis*&limit=100', { key });
    assert.equal(infix.body.data.total, 12, 'every new word reached the vocabulary');
    const vocab = await sql<{ word: string; docs: number }>`
      SELECT word, sum(docs) AS docs FROM search_vocab
      WHERE account_id = ${acc.id} AND word IN ('zephyrine', 'doomed', 'kept', 'patched', 'shared')
      GROUP BY word ORDER BY word`.execute(h.database.db);
    assert.deepEqual(
      vocab.rows.map((r) => [r.word, Number(r.docs)]),
      [
        ['kept', 1],
        ['patched', 1],
        ['shared', 12],
        ['zephyrine', 13],
      ],
    );
  });
});

describeEachDatabase('a bulk load as one batch', (h) => {
  it('sums the vocabulary changes of its objects and applies them once, at its end', async () => {
    const acc = await h.account('enterprise');
    const { database } = h;
    const vocab = async (db: Db) => {
      const { rows } = await sql<{ word: string; docs: number }>`
        SELECT word, sum(docs) AS docs FROM search_vocab
        WHERE account_id = ${acc.id} AND word IN ('bulkword', 'lonewordb', 'sharedbulk')
        GROUP BY word ORDER BY word`.execute(db);
      return rows.map((r) => [r.word, Number(r.docs)]);
    };
    let during: unknown[] = [];
    await database.db.transaction().execute((trx) =>
      asBatch(trx, async () => {
        for (const [i, content] of ['bulkword sharedbulk', 'sharedbulk', 'sharedbulk lonewordb'].entries()) {
          const row = dataRow(acc.id, { title: `Bulk ${i}`, content });
          await insertDataObject(trx, database.dialect, row);
          await indexDataObject(trx, database.dialect, row);
        }
        during = await vocab(trx);
      }),
    );
    assert.deepEqual(during, [], 'nothing is upserted until the batch ends');
    assert.deepEqual(await vocab(database.db), [
      ['bulkword', 1],
      ['lonewordb', 1],
      ['sharedbulk', 3],
    ]);
    const infix = await h.request('GET', '/v1/search?q=*aredbul*', { key: acc.adminKey });
    assert.equal(infix.body.data.total, 3);
  });
});
