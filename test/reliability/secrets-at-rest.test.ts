import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { before, it } from 'node:test';
import { sql } from 'kysely';
import { createMailSender } from '../../src/mail/sender.ts';
import { describeEachDatabase, type TestAccount } from '../helpers/harness.ts';
import { partOf } from '../helpers/smtp-server.ts';

/**
 * Issues one of each secret the service hands out (API key, invitation token, webhook secret),
 * then dumps every text column of every table: none may appear in plain text.
 */
describeEachDatabase(
  'secrets at rest: a database dump holds no key, token or webhook secret',
  (h) => {
    let acc: TestAccount;
    const secrets: string[] = [];
    before(async () => {
      acc = await h.account();
      secrets.push(acc.adminKey);
      const key = await h.request('POST', '/v1/api-keys', {
        key: acc.adminKey,
        body: { scopes: ['read'] },
        headers: { 'idempotency-key': 'dump-1' },
      });
      secrets.push(key.body.data.key);
      const hook = await h.request('POST', '/v1/webhooks', {
        key: acc.adminKey,
        body: { url: 'https://127.0.0.1:9/hook', events: ['*'], secret: 'whsec-plain-text-secret-123' },
      });
      assert.equal(hook.status, 201, hook.raw);
      secrets.push('whsec-plain-text-secret-123');
      await h.request('POST', '/v1/users', {
        key: acc.adminKey,
        body: { email: 'dump@example.com', role: 'member' },
      });
      const sender = createMailSender(h.ctx, { pollMs: 20 });
      const outbox = path.join(h.config.dataDir, 'outbox');
      const deadline = Date.now() + 5000;
      let token: string | undefined;
      while (!token && Date.now() < deadline) {
        for (const f of fs.existsSync(outbox) ? fs.readdirSync(outbox) : []) {
          token ??= /adsinv_[A-Za-z0-9_-]{43}/.exec(
            partOf(fs.readFileSync(path.join(outbox, f), 'utf8'), 'text/plain'),
          )?.[0];
        }
        await new Promise((r) => setTimeout(r, 20));
      }
      await sender.stop();
      assert.ok(token);
      secrets.push(token);
    });

    it('finds none of them in any column of any table', async () => {
      const tables =
        h.dialect === 'sqlite'
          ? (
              await sql<{ name: string }>`select name from sqlite_master where type = 'table'`.execute(
                h.database.db,
              )
            ).rows
          : (
              await sql<{
                name: string;
              }>`select table_name as name from information_schema.tables where table_schema = 'public'`.execute(
                h.database.db,
              )
            ).rows;
      let rows = 0;
      let hits = 0;
      for (const { name } of tables) {
        const dump = (
          await sql<Record<string, unknown>>`select * from ${sql.table(name)}`.execute(h.database.db)
        ).rows;
        rows += dump.length;
        const text = JSON.stringify(dump);
        for (const s of secrets) if (text.includes(s)) hits++;
      }
      assert.ok(rows > 0);
      assert.equal(hits, 0);
    });

    if (h.dialect === 'sqlite') {
      it('finds none of them in the SQLite file or its WAL either', async () => {
        await sql`PRAGMA wal_checkpoint(TRUNCATE)`.execute(h.database.db);
        const file = h.config.database.dialect === 'sqlite' ? h.config.database.file : '';
        const bytes = Buffer.concat(
          [file, `${file}-wal`].filter((f) => fs.existsSync(f)).map((f) => fs.readFileSync(f)),
        ).toString('latin1');
        assert.equal(secrets.filter((s) => bytes.includes(s)).length, 0);
      });
    }
  },
  { env: { ADS_WEBHOOK_ALLOW_PRIVATE: 'true' } },
);
