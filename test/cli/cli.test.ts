import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import BetterSqlite3 from 'better-sqlite3';
import { loadConfig } from '../../src/config.ts';
import { openDatabase } from '../../src/db/database.ts';
import { runAds, startServe } from '../helpers/process.ts';
import { partOf, startSmtpServer } from '../helpers/smtp-server.ts';

describe('ads command line', () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ads-cli-'));
  const env = { ADS_DATA_DIR: dataDir };
  after(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  it('migrates, then says the schema is up to date', () => {
    const first = runAds(['migrate'], env);
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stdout, /Applied: 0001-initial/);
    const second = runAds(['migrate'], env);
    assert.match(second.stdout, /up to date/);
  });

  let created: {
    account: { id: string; plan: string };
    admin: { id: string };
    api_key: { key: string; scopes: string[] };
  };
  it('creates an account with --json: one JSON object on stdout, the key included once', () => {
    const res = runAds(
      ['accounts', 'create', '--name', 'Acme', '--admin-email', 'ops@acme.test', '--plan', 'pro', '--json'],
      env,
    );
    assert.equal(res.code, 0, res.stderr);
    const lines = res.stdout.trim().split('\n');
    assert.equal(lines.length, 1);
    created = JSON.parse(lines[0]!);
    assert.match(created.account.id, /^acc_/);
    assert.equal(created.account.plan, 'pro');
    assert.match(created.api_key.key, /^ads_/);
    assert.deepEqual(created.api_key.scopes, ['read', 'write', 'admin']);
  });

  it('creates a key for a user with chosen scopes, and refuses scopes the role cannot hold', () => {
    const res = runAds(
      ['keys', 'create', '--user', created.admin.id, '--scopes', 'read', '--name', 'ci', '--json'],
      env,
    );
    assert.equal(res.code, 0, res.stderr);
    const key = JSON.parse(res.stdout);
    assert.deepEqual(key.scopes, ['read']);
    assert.equal(key.name, 'ci');
    assert.match(key.key, /^ads_/);
    for (const name of ['', 'n'.repeat(101)]) {
      const res = runAds(
        ['keys', 'create', '--user', created.admin.id, '--scopes', 'read', '--name', name],
        env,
      );
      assert.equal(res.code, 2, `--name of ${name.length}: ${res.stderr}`);
      assert.match(res.stderr, /--name must be 1 to 100 characters/);
    }
    const bad = runAds(['keys', 'create', '--user', created.admin.id, '--scopes', 'read,root'], env);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /unknown: root/);
    const nobody = runAds(
      ['keys', 'create', '--user', 'usr_01JD4Z5T8N3QK9W2V7R6M1B0XC', '--scopes', 'read'],
      env,
    );
    assert.equal(nobody.code, 1);
  });

  it('refuses a key for a user who has not accepted their invitation (it could not authenticate)', async () => {
    const database = openDatabase(loadConfig(env).database);
    const invitedId = 'usr_01JD4Z5T8N3QK9W2V7R6M1B0XD';
    try {
      const now = new Date().toISOString();
      await database.db
        .insertInto('users')
        .values({
          account_id: created.account.id,
          id: invitedId,
          email: 'later@acme.test',
          email_lower: 'later@acme.test',
          role: 'member',
          status: 'invited',
          created_at: now,
          updated_at: now,
        })
        .execute();
    } finally {
      await database.close();
    }
    const res = runAds(['keys', 'create', '--user', invitedId, '--scopes', 'read'], env);
    assert.equal(res.code, 1);
    assert.match(res.stderr, /has not accepted their invitation/);
    assert.doesNotMatch(res.stdout, /ads_/);
  });

  it('refuses an admin address the API would refuse', () => {
    for (const email of ['a,b@c', 'admin@localhost', `${'a'.repeat(250)}@b.co`, `${'a'.repeat(65)}@b.co`]) {
      const res = runAds(['accounts', 'create', '--name', 'Odd', '--admin-email', email], env);
      assert.equal(res.code, 2, `${email}: ${res.stderr}`);
      assert.match(res.stderr, /--admin-email must be an email address/);
    }
    // A usage mistake is found before the database is opened: no database is created or
    // migrated, and an unreachable one does not turn it into a connection error (exit 1).
    const fresh = fs.mkdtempSync(path.join(os.tmpdir(), 'ads-cli-usage-'));
    try {
      const res = runAds(['accounts', 'create', '--name', 'Odd', '--admin-email', 'bad'], {
        ADS_DATA_DIR: fresh,
      });
      assert.equal(res.code, 2, res.stderr);
      assert.deepEqual(fs.readdirSync(fresh), []);
      const far = runAds(['accounts', 'set-plan', 'acc_1', 'gold'], {
        ADS_DATA_DIR: fresh,
        ADS_DATABASE_URL: 'postgres://postgres@127.0.0.1:1/x',
      });
      assert.equal(far.code, 2, far.stderr);
      assert.match(far.stderr, /PLAN must be one of/);
    } finally {
      fs.rmSync(fresh, { recursive: true, force: true });
    }
  });

  it('changes a plan, and refuses an unknown plan or account', () => {
    assert.equal(runAds(['accounts', 'set-plan', created.account.id, 'enterprise'], env).code, 0);
    assert.equal(runAds(['accounts', 'set-plan', created.account.id, 'gold'], env).code, 2);
    assert.equal(runAds(['accounts', 'set-plan', 'acc_01JD4Z5T8N3QK9W2V7R6M1B0XC', 'free'], env).code, 1);
  });

  it('backup: a consistent copy of the data directory while a writer holds writes in the WAL', () => {
    fs.mkdirSync(path.join(dataDir, 'outbox'), { recursive: true });
    fs.writeFileSync(path.join(dataDir, 'outbox', 'kept.eml'), 'Subject: kept\r\n');
    // A writer that stays open: its change sits in the write-ahead log, not yet in ads.sqlite.
    const writer = new BetterSqlite3(path.join(dataDir, 'ads.sqlite'));
    writer.pragma('wal_autocheckpoint = 0');
    writer.prepare('UPDATE accounts SET name = ? WHERE id = ?').run('Acme live', created.account.id);
    const parent = fs.mkdtempSync(path.join(os.tmpdir(), 'ads-backup-'));
    const dest = path.join(parent, 'b');
    try {
      const res = runAds(['backup', dest], env);
      assert.equal(res.code, 0, res.stderr);
      assert.match(res.stdout, /database: .*ads\.sqlite \(\d+ pages, one consistent snapshot, checked\)/);
      assert.equal(fs.readFileSync(path.join(dest, 'outbox', 'kept.eml'), 'utf8'), 'Subject: kept\r\n');
      assert.ok(!fs.existsSync(path.join(dest, 'ads.sqlite-wal')), 'no live WAL copied beside the snapshot');
      const copy = new BetterSqlite3(path.join(dest, 'ads.sqlite'), { readonly: true });
      try {
        const row = copy.prepare('SELECT name FROM accounts WHERE id = ?').get(created.account.id) as {
          name: string;
        };
        assert.equal(row.name, 'Acme live');
        assert.equal(copy.pragma('integrity_check', { simple: true }), 'ok');
      } finally {
        copy.close();
      }
      const again = runAds(['backup', dest], env);
      assert.equal(again.code, 2);
      assert.match(again.stderr, /must be a new or empty directory/);
      const inside = runAds(['backup', path.join(dataDir, 'b')], env);
      assert.equal(inside.code, 2);
      assert.match(inside.stderr, /outside ADS_DATA_DIR/);
      // Inside it through a symbolic link: the data directory reached through one, or a
      // destination that is one. Both are refused, and nothing is written.
      const linkedDir = path.join(parent, 'linked-data');
      fs.symlinkSync(dataDir, linkedDir);
      const throughLink = runAds(['backup', path.join(dataDir, 'b')], { ...env, ADS_DATA_DIR: linkedDir });
      assert.equal(throughLink.code, 2, throughLink.stderr);
      assert.match(throughLink.stderr, /outside ADS_DATA_DIR/);
      fs.mkdirSync(path.join(dataDir, 'empty'));
      const linkedDest = path.join(parent, 'linked-dest');
      fs.symlinkSync(path.join(dataDir, 'empty'), linkedDest);
      const toLink = runAds(['backup', linkedDest], env);
      assert.equal(toLink.code, 2, toLink.stderr);
      assert.match(toLink.stderr, /outside ADS_DATA_DIR/);
      assert.deepEqual(fs.readdirSync(path.join(dataDir, 'empty')), []);
      assert.ok(!fs.existsSync(path.join(dataDir, 'b')));
      fs.rmdirSync(path.join(dataDir, 'empty'));
    } finally {
      writer.close();
      fs.rmSync(parent, { recursive: true, force: true });
    }
  });

  it('stops at start-up on a bad setting with one line naming the variable', () => {
    const res = runAds(['migrate'], { ...env, ADS_PORT: 'eighty' });
    assert.equal(res.code, 2);
    const lines = res.stderr.trim().split('\n');
    assert.equal(lines.length, 1);
    assert.match(lines[0]!, /ADS_PORT/);
  });

  it('names the setting when what it points at is unusable (a path: before touching the database)', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ads-paths-'));
    try {
      const aFile = path.join(dir, 'a-file');
      fs.writeFileSync(aFile, 'x');
      const cases: [string[], Record<string, string>, RegExp][] = [
        [['serve'], { ADS_TLS_CERT: 'missing.pem', ADS_TLS_KEY: 'missing.key' }, /ADS_TLS_CERT=.*ENOENT/],
        [['worker'], { ADS_WEBHOOK_CA_FILE: dir }, /ADS_WEBHOOK_CA_FILE=.*not a file/],
        // Not PEM: Node would drop it from the trust store without a word.
        [['worker'], { ADS_WEBHOOK_CA_FILE: aFile }, /ADS_WEBHOOK_CA_FILE=.*not a file of PEM certificates/],
        [['serve'], { ADS_DATA_DIR: aFile }, /ADS_DATA_DIR=.*not a directory/],
        // Every command, not only serve and worker (they gave exit 1 and a bare EEXIST).
        [['migrate'], { ADS_DATA_DIR: aFile }, /ADS_DATA_DIR=.*not a directory/],
        [
          ['accounts', 'create', '--name', 'X', '--admin-email', 'x@example.com'],
          { ADS_DATA_DIR: aFile },
          /ADS_DATA_DIR=.*not a directory/,
        ],
        [['backup', path.join(dir, 'copy')], { ADS_DATA_DIR: aFile }, /ADS_DATA_DIR=.*not a directory/],
        // Behind a trusted proxy (plain HTTP) too: named files that cannot be read are a mistake.
        [
          ['serve'],
          { ADS_TRUST_PROXY: 'true', ADS_TLS_CERT: 'missing.pem', ADS_TLS_KEY: 'missing.key' },
          /ADS_TLS_CERT=.*ENOENT/,
        ],
        [['serve'], { ADS_TLS_CERT: aFile, ADS_TLS_KEY: aFile }, /ADS_TLS_CERT=.*not a PEM certificate/],
        [
          ['worker'],
          { ADS_SMTP_URL: 'smtp://mail.example.com?bogus=1' },
          /ADS_SMTP_URL=.*unknown option "bogus"/,
        ],
        [['serve'], { ADS_REDIS_URL: 'redis://127.0.0.1:notaport' }, /ADS_REDIS_URL=.*not a valid URL/],
        [['serve', '--port', '9000'], {}, /Unknown option '--port'/],
        [['serve'], { ADS_HOST: 'no-such-host.invalid', ADS_PORT: '0' }, /ADS_HOST="no-such-host\.invalid"/],
      ];
      // The last case gets as far as listening, so it runs after the ones that must not.
      for (const [args, settings, message] of cases) {
        const res = runAds(args, { ...env, ADS_DATA_DIR: path.join(dir, 'data'), ...settings });
        assert.equal(res.code, 2, `${JSON.stringify(settings)}: ${res.stderr}`);
        assert.match(res.stderr, message);
        if (!settings.ADS_HOST) assert.ok(!fs.existsSync(path.join(dir, 'data', 'ads.sqlite')), res.stderr);
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('reindex: rewrites every search entry and says how many', () => {
    const res = runAds(['reindex'], env);
    assert.equal(res.code, 0, res.stderr);
    assert.match(res.stdout, /^Reindexed \d+ objects\.\n$/);
    const again = runAds(['reindex', '--restart'], env);
    assert.equal(again.code, 0, again.stderr);
    assert.equal(again.stdout, res.stdout);
    assert.equal(runAds(['reindex', '--bogus'], env).code, 2);
  });

  it('rejects an unknown command, or none, with usage on stderr and exit 2; help is usage on stdout, exit 0', () => {
    for (const args of [['frobnicate'], []]) {
      const res = runAds(args, env);
      assert.equal(res.code, 2, args.join(' '));
      assert.match(res.stderr, /Usage: ads/);
      assert.equal(res.stdout, '');
    }
    const help = runAds(['--help'], env);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /^Usage: ads/);
  });

  it('npm start passes SIGTERM on to the server, which drains and stops (a supervisor stopping npm)', async () => {
    const fresh = fs.mkdtempSync(path.join(os.tmpdir(), 'ads-npm-start-'));
    // Its own process group, so that whatever it leaves behind can be killed afterwards.
    const npm = spawn('npm', ['start', '--silent'], {
      cwd: path.resolve(import.meta.dirname, '../..'),
      env: { ...process.env, ADS_DATA_DIR: fresh, ADS_PORT: '0', ADS_LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let out = '';
    npm.stdout.on('data', (d) => {
      out += d;
    });
    npm.stderr.on('data', (d) => {
      out += d;
    });
    const until = async (what: RegExp, ms: number) => {
      const deadline = Date.now() + ms;
      while (!what.test(out) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      return what.test(out);
    };
    try {
      assert.ok(await until(/Serving https:\/\//, 60_000), out);
      npm.kill('SIGTERM');
      // Through dash's `sh -c` without exec the shell died and left the server running, undrained.
      assert.ok(await until(/"msg":"stopped"/, 30_000), out);
      assert.match(out, /"signal":"SIGTERM".*shutting down: draining in-flight requests/);
    } finally {
      try {
        process.kill(-(npm.pid as number), 'SIGKILL');
      } catch {
        // The group has already exited.
      }
      fs.rmSync(fresh, { recursive: true, force: true });
    }
  });

  it('serve: HTTPS with a generated certificate, a ready key on an empty database, SIGTERM exits 0', async () => {
    const fresh = fs.mkdtempSync(path.join(os.tmpdir(), 'ads-serve-'));
    try {
      // A first start that fails (its port is taken) makes no account, so the key of the start
      // that succeeds is still shown.
      const blocker = net.createServer();
      await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
      const taken = (blocker.address() as net.AddressInfo).port;
      const failed = runAds(['serve'], { ADS_DATA_DIR: fresh, ADS_PORT: String(taken) });
      blocker.close();
      assert.equal(failed.code, 2, failed.stderr);
      assert.match(failed.stderr, new RegExp(`ADS_PORT="${taken}": another process listens on .*EADDRINUSE`));
      assert.doesNotMatch(failed.stdout, /Admin API key/);
      const server = await startServe({ ADS_DATA_DIR: fresh });
      assert.match(server.url, /^https:\/\/127\.0\.0\.1:\d+$/);
      assert.ok(fs.existsSync(path.join(fresh, 'tls/cert.pem')));
      assert.ok(fs.existsSync(path.join(fresh, 'ads.sqlite')));
      const key = /Admin API key \(shown once, keep it safe\): (ads_\S+)/.exec(server.stdout())?.[1];
      assert.ok(key, server.stdout());
      // The first admin's address is one the API itself takes (its document says format: email).
      assert.match(server.stdout(), /with admin admin@example\.com\./);
      const users = await server.fetch('GET', '/v1/users', { key });
      assert.equal(users.body.data.users[0].email, 'admin@example.com');
      const created = await server.fetch('POST', '/v1/data', { key, body: { title: 'hello', type: 'note' } });
      assert.equal(created.status, 201);
      const listed = await server.fetch('GET', '/v1/data', { key });
      assert.equal(listed.body.data.total, 1);
      assert.equal((await server.fetch('GET', '/healthz')).status, 200);
      assert.equal((await server.fetch('GET', '/readyz')).status, 200);
      assert.equal(await server.stop('SIGTERM'), 0);
      assert.ok(!server.stderr().includes(key), 'the key never reaches the logs');
      // A second start on the same database creates no new account and prints no key.
      const again = await startServe({ ADS_DATA_DIR: fresh });
      assert.doesNotMatch(again.stdout(), /Admin API key/);
      assert.equal(await again.stop('SIGTERM'), 0);
    } finally {
      fs.rmSync(fresh, { recursive: true, force: true });
    }
  });
  it('serve on ADS_PORT=0: the OpenAPI servers entry and invitation links name the port it was given', async () => {
    const fresh = fs.mkdtempSync(path.join(os.tmpdir(), 'ads-serve-'));
    const smtp = await startSmtpServer();
    try {
      // startServe asks for ADS_PORT=0 and leaves ADS_PUBLIC_URL unset.
      const server = await startServe({ ADS_DATA_DIR: fresh, ADS_SMTP_URL: smtp.url });
      const port = new URL(server.url).port;
      assert.notEqual(port, '0');
      const doc = await server.fetch('GET', '/v1/openapi.json');
      assert.equal(doc.status, 200);
      assert.equal(doc.body.servers[0].url, server.url);
      const key = /Admin API key \(shown once, keep it safe\): (ads_\S+)/.exec(server.stdout())?.[1];
      assert.ok(key, server.stdout());
      const invited = await server.fetch('POST', '/v1/users', {
        key,
        body: { email: 'port@example.com', role: 'member' },
      });
      assert.equal(invited.status, 201);
      const [msg] = await smtp.waitFor(1, 30_000);
      assert.ok(msg);
      const text = partOf(msg.raw, 'text/plain');
      assert.ok(
        text.includes(`${server.url}/v1/invitations/accept?token=adsinv_`),
        `the link names port ${port}:\n${text}`,
      );
      assert.equal(await server.stop('SIGTERM'), 0);
    } finally {
      await smtp.close();
      fs.rmSync(fresh, { recursive: true, force: true });
    }
  });
});
