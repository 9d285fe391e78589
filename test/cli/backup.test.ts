import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
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

// The data directory changes while it is copied: the file mailer writes and renames its outbox
// files, and a start that crashed while writing its TLS pair left a `.tls-*` directory.
describe('ads backup of a data directory that changes during the copy', () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ads-backup-churn-'));
  const outbox = path.join(dataDir, 'outbox');
  const dest = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ads-backup-out-')), 'b');
  let churn: ReturnType<typeof spawn>;
  before(async () => {
    fs.mkdirSync(outbox);
    fs.mkdirSync(path.join(dataDir, '.tls-crashed'));
    fs.writeFileSync(path.join(dataDir, '.tls-crashed', 'key.pem'), 'a private key');
    fs.writeFileSync(path.join(outbox, 'kept.eml'), 'Subject: kept\r\n');
    const db = new BetterSqlite3(path.join(dataDir, 'ads.sqlite'));
    db.exec('CREATE TABLE t (x)');
    db.close();
    // Another process keeps writing files and removing them, hundreds at a time, so the copy lists
    // files that are gone when it reaches them.
    const script = `const fs = require('node:fs'); const path = require('node:path');
      const dir = ${JSON.stringify(outbox)}; let n = 0; process.stdout.write('ready\\n');
      for (;;) { const names = [];
        for (let i = 0; i < 300; i++) { const f = path.join(dir, 'tmp-' + (n++) + '.eml');
          fs.writeFileSync(f, 'x'.repeat(2000)); names.push(f); }
        for (const f of names) fs.rmSync(f); }`;
    churn = spawn(process.execPath, ['-e', script]);
    await new Promise<void>((resolve, reject) => {
      churn.stdout?.once('data', () => resolve());
      churn.once('exit', (code) => reject(new Error(`churn exited ${code}`)));
    });
  });
  after(() => {
    churn.kill();
    fs.rmSync(dataDir, { recursive: true, force: true });
    fs.rmSync(path.dirname(dest), { recursive: true, force: true });
  });

  it('skips files that vanish mid-copy and leaves out stale TLS temporaries', () => {
    for (let run = 0; run < 3; run++) {
      const to = `${dest}-${run}`;
      const res = runAds(['backup', to], { ADS_DATA_DIR: dataDir });
      assert.equal(res.code, 0, res.stderr);
      assert.equal(fs.readFileSync(path.join(to, 'outbox', 'kept.eml'), 'utf8'), 'Subject: kept\r\n');
      assert.ok(!fs.existsSync(path.join(to, '.tls-crashed')), 'no stray private key in the backup');
      for (const name of fs.readdirSync(path.join(to, 'outbox'))) {
        assert.ok(fs.statSync(path.join(to, 'outbox', name)).isFile());
      }
    }
  });
});

// A directory the owner made read-only (a hardened `tls/`) is copied, then given its mode: the copy
// into it must not fail. Run as an unprivileged user (root writes into read-only directories anyway).
describe('ads backup of read-only directories', () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'ads-backup-ro-'));
  const dataDir = path.join(root, 'data');
  const dest = path.join(root, 'out');
  const asRoot = process.getuid?.() === 0;
  before(() => {
    fs.mkdirSync(path.join(dataDir, 'tls'), { recursive: true });
    fs.writeFileSync(path.join(dataDir, 'tls', 'key.pem'), 'a private key', { mode: 0o600 });
    fs.writeFileSync(path.join(dataDir, 'tls', 'cert.pem'), 'a certificate', { mode: 0o644 });
    const db = new BetterSqlite3(path.join(dataDir, 'ads.sqlite'));
    db.exec('CREATE TABLE t (x); INSERT INTO t VALUES (1)');
    db.close();
    if (asRoot) {
      // Everything belongs to the unprivileged user that runs the backup.
      for (const p of [
        root,
        dataDir,
        path.join(dataDir, 'tls'),
        ...['key.pem', 'cert.pem'].map((f) => path.join(dataDir, 'tls', f)),
        path.join(dataDir, 'ads.sqlite'),
      ]) {
        fs.chownSync(p, 65534, 65534);
      }
    }
    fs.chmodSync(path.join(dataDir, 'tls'), 0o500);
  });
  after(() => {
    fs.chmodSync(path.join(dataDir, 'tls'), 0o700);
    if (fs.existsSync(path.join(dest, 'tls'))) fs.chmodSync(path.join(dest, 'tls'), 0o700);
    fs.rmSync(root, { recursive: true, force: true });
  });

  it('copies their files and keeps their mode', () => {
    const res = spawnSync(
      process.execPath,
      [path.resolve(import.meta.dirname, '../../bin/ads.js'), 'backup', dest],
      {
        env: { ...process.env, ADS_DATA_DIR: dataDir, ADS_LOG_LEVEL: 'warn' },
        encoding: 'utf8',
        timeout: 60_000,
        ...(asRoot ? { uid: 65534, gid: 65534 } : {}),
      },
    );
    assert.equal(res.status, 0, res.stderr);
    assert.equal(fs.readFileSync(path.join(dest, 'tls', 'key.pem'), 'utf8'), 'a private key');
    assert.equal(fs.statSync(path.join(dest, 'tls')).mode & 0o777, 0o500);
    assert.equal(fs.statSync(path.join(dest, 'tls', 'key.pem')).mode & 0o777, 0o600);
    assert.match(res.stdout, /files: 2 copied/);
  });
});

// A backup that fails part-way must leave nothing that looks like a backup: restored, a directory
// with the secret key but an empty or half-copied database started an empty service.
describe('ads backup that cannot finish', () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'ads-backup-fail-'));
  after(() => fs.rmSync(root, { recursive: true, force: true }));

  /** A data directory with a secret key and a database of `rows` rows of 4 KB. */
  const dataDirWith = (name: string, rows: number) => {
    const dir = path.join(root, name);
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, 'secret.key'), 'a key\n');
    const db = new BetterSqlite3(path.join(dir, 'ads.sqlite'));
    db.exec('CREATE TABLE filler (id INTEGER PRIMARY KEY, data BLOB)');
    const insert = db.prepare('INSERT INTO filler (data) VALUES (?)');
    db.transaction(() => {
      for (let i = 0; i < rows; i++) insert.run(Buffer.alloc(4000, i % 251));
    })();
    db.close();
    return dir;
  };
  const leftovers = (dest: string) =>
    fs.readdirSync(path.dirname(dest)).filter((n) => n.startsWith(path.basename(dest)));

  it('a damaged database: exit 1 naming it, and no backup directory, partial or whole', () => {
    const dir = dataDirWith('damaged', 500);
    // Garbage over pages in the middle of the table's B-tree.
    const fd = fs.openSync(path.join(dir, 'ads.sqlite'), 'r+');
    fs.writeSync(fd, Buffer.alloc(4096 * 8, 0x5a), 0, 4096 * 8, 4096 * 200);
    fs.closeSync(fd);
    const dest = path.join(root, 'out-damaged', 'b');
    const res = runAds(['backup', dest], { ADS_DATA_DIR: dir });
    assert.equal(res.code, 1, res.stderr);
    assert.match(res.stderr, /damaged|malformed/);
    assert.deepEqual(leftovers(dest), []);
  });

  it('a truncated database: exit 1 and no backup directory', () => {
    const dir = dataDirWith('truncated', 500);
    fs.truncateSync(path.join(dir, 'ads.sqlite'), 4096 * 100 + 100);
    const dest = path.join(root, 'out-truncated', 'b');
    const res = runAds(['backup', dest], { ADS_DATA_DIR: dir });
    assert.equal(res.code, 1, res.stderr);
    assert.deepEqual(leftovers(dest), []);
  });

  it('an empty directory given as DEST is filled only when the backup is complete, and kept', () => {
    const dir = dataDirWith('whole', 50);
    const dest = path.join(root, 'out-empty');
    fs.mkdirSync(dest);
    // Its own mode stays (a mount point or a directory prepared for backups is not replaced).
    fs.chmodSync(dest, 0o750);
    const res = runAds(['backup', dest], { ADS_DATA_DIR: dir });
    assert.equal(res.code, 0, res.stderr);
    assert.deepEqual(fs.readdirSync(dest).sort(), ['ads.sqlite', 'secret.key']);
    assert.match(res.stdout, /one consistent snapshot, checked/);
    assert.equal(fs.statSync(dest).mode & 0o777, 0o750);
    assert.deepEqual(
      fs.readdirSync(root).filter((n) => n.includes('.partial-')),
      [],
    );
    // Through a symbolic link to an empty directory: filled in place, the link kept.
    const target = path.join(root, 'out-link-target');
    fs.mkdirSync(target);
    const link = path.join(root, 'out-link');
    fs.symlinkSync(target, link);
    const linked = runAds(['backup', link], { ADS_DATA_DIR: dir });
    assert.equal(linked.code, 0, linked.stderr);
    assert.ok(fs.lstatSync(link).isSymbolicLink());
    assert.deepEqual(fs.readdirSync(target).sort(), ['ads.sqlite', 'secret.key']);
  });

  it('Ctrl-C or SIGTERM during the copy stops it: exit 1, and no backup directory', async () => {
    const dir = dataDirWith('signalled', 30_000);
    for (const signal of ['SIGINT', 'SIGTERM'] as const) {
      const dest = path.join(root, `out-${signal}`, 'b');
      const child = spawn(
        process.execPath,
        [path.resolve(import.meta.dirname, '../../bin/ads.js'), 'backup', dest],
        {
          env: { ...process.env, ADS_DATA_DIR: dir, ADS_LOG_LEVEL: 'warn' },
        },
      );
      let stderr = '';
      child.stderr.on('data', (d) => {
        stderr += d;
      });
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      // Sent once the copy of the database has begun: its file exists in the partial directory.
      const copying = path.join(`${dest}.partial-${child.pid}`, 'ads.sqlite');
      while (!fs.existsSync(copying) && child.exitCode === null) await new Promise((r) => setTimeout(r, 2));
      child.kill(signal);
      assert.equal(await exited, 1, stderr);
      assert.match(stderr, new RegExp(`stopped by ${signal}; no backup was written`));
      assert.deepEqual(leftovers(dest), []);
    }
  });

  it('with ADS_SECRET_KEY set, a secret.key left in the directory is not copied', () => {
    const dir = dataDirWith('setting', 5);
    const dest = path.join(root, 'out-setting');
    const res = runAds(['backup', dest], {
      ADS_DATA_DIR: dir,
      ADS_SECRET_KEY: Buffer.alloc(32, 7).toString('base64'),
    });
    assert.equal(res.code, 0, res.stderr);
    assert.deepEqual(fs.readdirSync(dest), ['ads.sqlite']);
    assert.match(res.stdout, /set by ADS_SECRET_KEY, so not in the backup/);
  });

  it('a database reached through a linked directory is copied as a file, never through the link', () => {
    const dir = path.join(root, 'linked-db');
    const elsewhere = path.join(root, 'linked-db-elsewhere');
    fs.mkdirSync(dir);
    fs.mkdirSync(elsewhere);
    fs.symlinkSync(elsewhere, path.join(dir, 'db'));
    const live = path.join(elsewhere, 'ads.sqlite');
    const db = new BetterSqlite3(live);
    db.exec("CREATE TABLE t (x); INSERT INTO t VALUES ('live')");
    db.close();
    const before = fs.readFileSync(live);
    const dest = path.join(root, 'out-linked-db');
    const res = runAds(['backup', dest], {
      ADS_DATA_DIR: dir,
      ADS_DATABASE_URL: `sqlite:${path.join(dir, 'db', 'ads.sqlite')}`,
    });
    assert.equal(res.code, 0, res.stderr);
    assert.match(res.stdout, new RegExp(`database: ${path.join(dest, 'ads.sqlite')} \\(`));
    assert.ok(fs.lstatSync(path.join(dest, 'ads.sqlite')).isFile(), 'a copy, at the top level');
    const copy = new BetterSqlite3(path.join(dest, 'ads.sqlite'), { readonly: true });
    try {
      assert.deepEqual(copy.prepare('SELECT x FROM t').all(), [{ x: 'live' }]);
    } finally {
      copy.close();
    }
    assert.ok(fs.readFileSync(live).equals(before), 'the live database is untouched');
  });

  it('a backup killed (-9) while building in an existing DEST leaves a DEST that start-up refuses', async () => {
    const dir = dataDirWith('killed', 30_000);
    const dest = path.join(root, 'out-killed');
    fs.mkdirSync(dest);
    const child = spawn(
      process.execPath,
      [path.resolve(import.meta.dirname, '../../bin/ads.js'), 'backup', dest],
      {
        env: { ...process.env, ADS_DATA_DIR: dir, ADS_LOG_LEVEL: 'warn' },
      },
    );
    const exited = new Promise((resolve) => child.once('exit', resolve));
    const partial = `.partial-${child.pid}`;
    const copying = path.join(dest, partial, 'ads.sqlite');
    while (!fs.existsSync(copying) && child.exitCode === null) await new Promise((r) => setTimeout(r, 2));
    child.kill('SIGKILL');
    await exited;
    assert.deepEqual(fs.readdirSync(dest), [partial]);
    // Restored as it is, it would have started an empty service with a new admin key.
    for (const command of ['serve', 'worker', 'migrate']) {
      const res = runAds([command], { ADS_DATA_DIR: dest, ADS_PORT: '0' });
      assert.equal(res.code, 2, `${command}: ${res.stderr}`);
      assert.match(
        res.stderr,
        new RegExp(`ADS_DATA_DIR=.*holds \\${partial}, left by an ads backup that did not finish`),
      );
      assert.doesNotMatch(res.stdout, /Admin API key/);
    }
    assert.deepEqual(fs.readdirSync(dest), [partial], 'nothing written beside it');
  });

  it('an empty argument is a usage error, not the current directory', () => {
    const res = runAds(['backup', ''], { ADS_DATA_DIR: dataDirWith('empty-arg', 1) });
    assert.equal(res.code, 2);
    assert.match(res.stderr, /backup takes one argument/);
  });
});
