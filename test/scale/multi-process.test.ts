import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createTestDatabase, postgresSkipReason } from '../helpers/databases.ts';
import { runAds, type ServeProcess, startServe } from '../helpers/process.ts';
import { partOf } from '../helpers/smtp-server.ts';

const redisUrl = process.env.ADS_TEST_REDIS_URL;
const skip =
  postgresSkipReason() || (redisUrl ? false : 'needs ADS_TEST_REDIS_URL for the shared rate-limit budget');

/**
 * Two real `ads serve` processes over one PostgreSQL and one Redis, sharing no memory: what one
 * instance changes, the other honours on its very next request.
 */
describe('two API processes over one PostgreSQL and one Redis', { skip }, () => {
  let drop: () => Promise<void>;
  let a: ServeProcess;
  let b: ServeProcess;
  let admin: { key: string; userId: string; accountId: string };
  let aDir = '';
  let bDir = '';
  const dirs: string[] = [];

  before(async () => {
    const db = await createTestDatabase('postgres');
    drop = db.drop;
    if (db.config.dialect !== 'postgres') throw new Error('unreachable');
    const shared = {
      ADS_DATABASE_URL: db.config.url,
      ADS_REDIS_URL: redisUrl ?? '',
      ADS_SECRET_KEY: randomBytes(32).toString('base64'),
    };
    const dirFor = () => {
      const d = fs.mkdtempSync(path.join(os.tmpdir(), 'ads-mp-'));
      dirs.push(d);
      return d;
    };
    const migrated = runAds(['migrate'], { ...shared, ADS_DATA_DIR: dirFor() });
    assert.equal(migrated.code, 0, migrated.stderr);
    const created = runAds(
      ['accounts', 'create', '--name', 'MP', '--admin-email', 'mp@example.com', '--json'],
      {
        ...shared,
        ADS_DATA_DIR: dirFor(),
      },
    );
    assert.equal(created.code, 0, created.stderr);
    const out = JSON.parse(created.stdout);
    admin = { key: out.api_key.key, userId: out.admin.id, accountId: out.account.id };
    // Each process keeps its own TLS files; both share the database, Redis and the secret key.
    aDir = dirFor();
    bDir = dirFor();
    [a, b] = await Promise.all([
      startServe({ ...shared, ADS_DATA_DIR: aDir }),
      startServe({ ...shared, ADS_DATA_DIR: bDir }),
    ]);
  });

  after(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await drop?.();
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  });

  it('reads, lists and deletes through B what was written through A', async () => {
    const created = await a.fetch('POST', '/v1/data', {
      key: admin.key,
      body: { title: 'from A', type: 'note' },
    });
    assert.equal(created.status, 201);
    const id = created.body.data.id;
    const got = await b.fetch('GET', `/v1/data/${id}`, { key: admin.key });
    assert.equal(got.status, 200);
    assert.equal(got.body.data.title, 'from A');
    const listed = await b.fetch('GET', '/v1/data?limit=100', { key: admin.key });
    assert.ok(listed.body.data.items.some((i: { id: string }) => i.id === id));
    assert.equal((await b.fetch('DELETE', `/v1/data/${id}`, { key: admin.key })).status, 204);
    assert.equal((await a.fetch('GET', `/v1/data/${id}`, { key: admin.key })).status, 404);
  });

  it('refuses on B, on the next request, a key revoked through A', async () => {
    const made = await a.fetch('POST', '/v1/api-keys', { key: admin.key, body: { scopes: ['read'] } });
    assert.equal(made.status, 201);
    const key = made.body.data.key;
    assert.equal((await b.fetch('GET', '/v1/data', { key })).status, 200);
    assert.equal(
      (await a.fetch('DELETE', `/v1/api-keys/${made.body.data.id}`, { key: admin.key })).status,
      204,
    );
    assert.equal((await b.fetch('GET', '/v1/data', { key })).status, 401);
  });

  it('refuses on B, on the next request, an admin call of a user demoted through A', async () => {
    const invited = await a.fetch('POST', '/v1/users', {
      key: admin.key,
      body: { email: 'second@example.com', role: 'admin' },
    });
    assert.equal(invited.status, 201);
    // No SMTP configured: whichever process's mail sender claims the message writes it into its
    // own data directory's outbox (exactly one of them does).
    let token: string | undefined;
    const deadline = Date.now() + 10_000;
    while (!token && Date.now() < deadline) {
      for (const outbox of [path.join(aDir, 'outbox'), path.join(bDir, 'outbox')]) {
        for (const f of fs.existsSync(outbox) ? fs.readdirSync(outbox) : []) {
          if (!f.endsWith('.eml')) continue;
          const text = partOf(fs.readFileSync(path.join(outbox, f), 'utf8'), 'text/plain');
          if (text.includes('second@example.com')) token = /adsinv_[A-Za-z0-9_-]{43}/.exec(text)?.[0];
        }
      }
      if (!token) await new Promise((r) => setTimeout(r, 50));
    }
    assert.ok(token, 'invitation written to the outbox');
    const accepted = await b.fetch('POST', '/v1/invitations/accept', { body: { token } });
    assert.equal(accepted.status, 200);
    const second = accepted.body.data.api_key.key;
    const ok = await b.fetch('POST', '/v1/users', {
      key: second,
      body: { email: 'third@example.com', role: 'member' },
    });
    assert.equal(ok.status, 201);
    const demoted = await a.fetch('PATCH', `/v1/users/${accepted.body.data.user.id}`, {
      key: admin.key,
      body: { role: 'member' },
    });
    assert.equal(demoted.status, 200);
    const refused = await b.fetch('POST', '/v1/users', {
      key: second,
      body: { email: 'fourth@example.com', role: 'member' },
    });
    assert.equal(refused.status, 403);
  });

  it('never loses or duplicates rows under concurrent writes through both', async () => {
    const before = (await a.fetch('GET', '/v1/data', { key: admin.key })).body.data.total;
    const titles = Array.from({ length: 40 }, (_, i) => `concurrent ${i}`);
    const results = await Promise.all(
      titles.map((title, i) =>
        (i % 2 ? a : b).fetch('POST', '/v1/data', { key: admin.key, body: { title, type: 'record' } }),
      ),
    );
    assert.deepEqual(new Set(results.map((r) => r.status)), new Set([201]));
    const ids = new Set(results.map((r) => r.body.data.id));
    assert.equal(ids.size, 40);
    const after = (await b.fetch('GET', '/v1/data', { key: admin.key })).body.data.total;
    assert.equal(after - before, 40);
  });

  it('shares one rate-limit budget per key across both processes through Redis', async () => {
    const made = await a.fetch('POST', '/v1/api-keys', { key: admin.key, body: { scopes: ['read'] } });
    const key = made.body.data.key;
    // Stay inside one aligned minute.
    const intoMinute = Date.now() % 60_000;
    if (intoMinute > 45_000) await new Promise((r) => setTimeout(r, 61_000 - intoMinute));
    const results = await Promise.all(
      Array.from({ length: 70 }, (_, i) => (i % 2 ? a : b).fetch('GET', '/v1/account', { key })),
    );
    const ok = results.filter((r) => r.status === 200).length;
    const limited = results.filter((r) => r.status === 429).length;
    assert.equal(ok, 60);
    assert.equal(limited, 10);
  });
});
