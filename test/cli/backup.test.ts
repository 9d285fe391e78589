import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import BetterSqlite3 from 'better-sqlite3';
import { runAds } from '../helpers/process.ts';

// A backup in steps starts over whenever another connection writes: against a service that writes
// all the time it never ended. `ads backup` copies in one step, under one read snapshot.
describe('ads backup against a database written to all the time', () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ads-backup-busy-'));
  const file = path.join(dataDir, 'ads.sqlite');
  const dest = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ads-backup-out-')), 'b');
  let writer: ReturnType<typeof spawn>;
  before(async () => {
    const db = new BetterSqlite3(file);
    db.pragma('journal_mode = WAL');
    db.exec('CREATE TABLE filler (id INTEGER PRIMARY KEY, data BLOB); CREATE TABLE ticks (at INTEGER)');
    const insert = db.prepare('INSERT INTO filler (data) VALUES (?)');
    db.transaction(() => {
      for (let i = 0; i < 20_000; i++) insert.run(Buffer.alloc(4000, i % 251));
    })();
    db.close();
    // Another process writing every 2 ms, as a busy service does.
    const script = `const D = require('better-sqlite3'); const db = new D(${JSON.stringify(file)});
      db.pragma('busy_timeout = 5000'); const s = db.prepare('INSERT INTO ticks VALUES (?)');
      process.stdout.write('ready\\n'); setInterval(() => s.run(Date.now()), 2);`;
    writer = spawn(process.execPath, ['-e', script], { cwd: path.resolve(import.meta.dirname, '../..') });
    await new Promise<void>((resolve, reject) => {
      writer.stdout?.once('data', () => resolve());
      writer.once('exit', (code) => reject(new Error(`writer exited ${code}`)));
    });
  });
  after(() => {
    writer.kill();
    fs.rmSync(dataDir, { recursive: true, force: true });
    fs.rmSync(path.dirname(dest), { recursive: true, force: true });
  });

  it('finishes, with every filler row, while the writer keeps writing', () => {
    const res = runAds(['backup', dest], { ADS_DATA_DIR: dataDir });
    assert.equal(res.code, 0, `${res.stderr} (a null code is the 60 s timeout)`);
    const copy = new BetterSqlite3(path.join(dest, 'ads.sqlite'), { readonly: true });
    try {
      assert.equal((copy.prepare('SELECT count(*) AS n FROM filler').get() as { n: number }).n, 20_000);
      assert.equal(copy.pragma('integrity_check', { simple: true }), 'ok');
    } finally {
      copy.close();
    }
  });
});
