import assert from 'node:assert/strict';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Worker } from 'node:worker_threads';
import BetterSqlite3 from 'better-sqlite3';
import { openSqlite } from '../../src/db/sqlite.ts';
import { waitUntil } from '../webhooks/fixtures.ts';

// Beside a process whose read-lock holder renews its snapshot every turn (a busy `ads serve`),
// SQLite's own checkpoints never empty the WAL written by another process, and the file grows.
// Each process that opens the database checks the WAL's size and, past its limit, checkpoints and
// truncates it, waiting briefly for the readers (src/db/sqlite.ts, trimWal).

/**
 * A reader in another thread that, like the read-lock holder of a busy `ads serve`, opens a read
 * transaction at the start of every event-loop turn and ends it when the turn ends. SQLite locks
 * the connections of two threads against each other as it does two processes'.
 */
const HOLDER = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.module);
const db = new Database(workerData.file);
const begin = db.prepare('begin');
const read = db.prepare('select count(*) from t');
const commit = db.prepare('commit');
let stop = false;
parentPort.on('message', () => { stop = true; });
const turn = () => {
  begin.run();
  read.get();
  setImmediate(() => {
    commit.run();
    if (!stop) return turn();
    db.close();
    parentPort.postMessage('stopped');
  });
};
turn();
parentPort.postMessage('holding');
`;

async function startHolder(file: string) {
  const worker = new Worker(HOLDER, {
    eval: true,
    workerData: { file, module: createRequire(import.meta.url).resolve('better-sqlite3') },
  });
  await new Promise((resolve) => worker.once('message', resolve));
  return async () => {
    const stopped = new Promise((resolve) => worker.once('message', resolve));
    worker.postMessage('stop');
    await stopped;
    await worker.terminate();
  };
}

const MiB = 1024 * 1024;
const walBytes = (file: string) => (fs.existsSync(`${file}-wal`) ? fs.statSync(`${file}-wal`).size : 0);

/** About `mib` MiB of rows, written in transactions of 256 KiB (too few pages for an automatic checkpoint). */
function write(raw: BetterSqlite3.Database, mib: number) {
  const insert = raw.prepare('insert into t (v) values (?)');
  const row = 'x'.repeat(1024);
  for (let t = 0; t < mib * 4; t++)
    raw.transaction(() => Array.from({ length: 256 }, () => insert.run(row)))();
}

describe('SQLite WAL trimmed past its limit', () => {
  let dir: string;
  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ads-wal-'));
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  const open = (name: string, checkMs: number) => {
    const file = path.join(dir, name);
    const db = openSqlite(file, 8, { limitBytes: MiB, checkMs });
    db.raw.exec('create table t (id integer primary key, v text)');
    return { file, db };
  };

  it('empties the WAL beside a reader that renews its snapshot every turn', async () => {
    const { file, db } = open('renewing.sqlite', 3_600_000);
    const stopHolder = await startHolder(file);
    try {
      write(db.raw, 3);
      assert.ok(walBytes(file) > 2 * MiB, `WAL of ${walBytes(file)} bytes`);
      // The renewing reader is never behind; a trim may find it busy when its thread gets no turn
      // within the wait (a loaded machine), and empties the WAL at a later try, as the timer would.
      const tries: (string | undefined)[] = [];
      await waitUntil('the WAL emptied', () => {
        tries.push(db.trimWal());
        return tries.at(-1) === 'emptied';
      });
      assert.ok(!tries.includes('behind'), tries.join());
      assert.equal(walBytes(file), 0);
      // Under its limit it is left alone.
      write(db.raw, 0.5);
      const size = walBytes(file);
      assert.ok(size > 0 && size < MiB);
      assert.equal(db.trimWal(), undefined);
      assert.equal(walBytes(file), size);
    } finally {
      await stopHolder();
      db.close();
    }
  });

  /**
   * `steps` with a reader in this thread that takes a snapshot when told and never renews it; once
   * the reader is done, the WAL must be emptied.
   */
  const withReader = (
    name: string,
    steps: (db: ReturnType<typeof openSqlite>, file: string, snapshot: () => void) => void,
  ) => {
    const { file, db } = open(name, 3_600_000);
    const reader = new BetterSqlite3(file);
    try {
      steps(db, file, () => {
        reader.exec('begin');
        reader.prepare('select count(*) from t').get();
      });
      reader.exec('commit');
      assert.equal(db.trimWal(), 'emptied');
      assert.equal(walBytes(file), 0);
    } finally {
      reader.close();
      db.close();
    }
  };

  it('leaves the WAL to a reader that keeps an old snapshot, and trims it once that reader is done', () =>
    withReader('stuck.sqlite', (db, file, snapshot) => {
      write(db.raw, 1);
      snapshot();
      // Far behind: the frames written since its snapshot cannot be copied, so no TRUNCATE waits.
      write(db.raw, 2);
      const size = walBytes(file);
      // No TRUNCATE tried, so neither this process nor any writer waited for the reader.
      assert.equal(db.trimWal(), 'behind', 'the old snapshot stands in the way');
      assert.equal(walBytes(file), size);
    }));

  it('gives up on a current reader that does not let go, and puts its lock wait back', () =>
    withReader('current.sqlite', (db, file, snapshot) => {
      write(db.raw, 2);
      // Current (nothing written since), so the TRUNCATE waits for it, and it never lets go.
      snapshot();
      assert.equal(db.trimWal(), 'busy');
      assert.ok(walBytes(file) > MiB);
      // The connection waits on locks for as long as before.
      assert.equal(db.raw.pragma('busy_timeout', { simple: true }), 5000);
    }));

  it('pauses its timer after a TRUNCATE that waited in vain, then empties the WAL once the reader lets go', async () => {
    const { file, db } = open('pause.sqlite', 20);
    const reader = new BetterSqlite3(file);
    // When the timer runs each TRUNCATE checkpoint.
    const truncates: number[] = [];
    const pragma = db.raw.pragma.bind(db.raw);
    db.raw.pragma = ((source: string, options?: BetterSqlite3.PragmaOptions) => {
      if (source === 'wal_checkpoint(TRUNCATE)') truncates.push(Date.now());
      return pragma(source, options);
    }) as typeof db.raw.pragma;
    try {
      write(db.raw, 2);
      // Current (nothing written since), so a TRUNCATE waits for it (50 ms), and it does not let go.
      reader.exec('begin');
      reader.prepare('select count(*) from t').get();
      await waitUntil('a TRUNCATE tried', () => truncates.length > 0);
      assert.ok(walBytes(file) > MiB);
      reader.exec('commit');
      await waitUntil('the WAL emptied', () => walBytes(file) === 0);
      // Without the pause the 20 ms timer would have tried again within about 20 ms, and emptied it.
      assert.equal(truncates.length, 2);
      assert.ok(
        truncates[1]! - truncates[0]! >= 1900,
        `tried again after ${truncates[1]! - truncates[0]!} ms`,
      );
    } finally {
      reader.close();
      db.close();
    }
  });

  it('checks on its own timer, so a process that only reads trims what another wrote', async () => {
    const { file, db } = open('timer.sqlite', 20);
    const stopHolder = await startHolder(file);
    const writer = new BetterSqlite3(file);
    try {
      write(writer, 3);
      await waitUntil('the WAL emptied', () => walBytes(file) === 0);
    } finally {
      writer.close();
      await stopHolder();
      db.close();
    }
  });
});
