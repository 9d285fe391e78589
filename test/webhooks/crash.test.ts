import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { migrate, openDatabase } from '../../src/db/database.ts';
import { createTestDatabase, postgresSkipReason } from '../helpers/databases.ts';
import { type ServeProcess, startServe } from '../helpers/process.ts';
import { startReceiverWithCa, waitUntil } from './fixtures.ts';

const WRITES = 8;

for (const dialect of ['sqlite', 'postgres'] as const) {
  const skip = dialect === 'postgres' ? postgresSkipReason() : false;
  describe(`webhooks survive SIGKILL of ads serve [${dialect}]`, { skip }, () => {
    let db: Awaited<ReturnType<typeof createTestDatabase>>;
    let receiver: Awaited<ReturnType<typeof startReceiverWithCa>>;
    const servers: ServeProcess[] = [];
    before(async () => {
      db = await createTestDatabase(dialect);
      receiver = await startReceiverWithCa();
    });
    after(async () => {
      const running = servers.filter((s) => s.child.exitCode === null && s.child.signalCode === null);
      await Promise.all(running.map((s) => s.stop('SIGKILL')));
      await receiver?.close();
      await db?.drop();
    });

    it('delivers every committed event after a restart: nothing is lost', async () => {
      const env: Record<string, string> = {
        ADS_DATA_DIR: db.dataDir,
        ADS_HOST: '127.0.0.1',
        ADS_WEBHOOK_ALLOW_PRIVATE: 'true',
        ADS_WEBHOOK_CA_FILE: receiver.caFile,
        // Long enough that the deliveries are still pending when the process dies.
        ADS_WEBHOOK_RETRY_SCHEDULE: '1,2,2,2,2',
        ADS_WEBHOOK_TIMEOUT_MS: '3000',
      };
      if (db.config.dialect === 'postgres') env.ADS_DATABASE_URL = db.config.url;

      let accepting = false;
      const delivered = new Set<string>();
      const attempted = new Set<string>();
      receiver.rx.setHandler((req) => {
        const eventId = JSON.parse(req.body).id as string;
        attempted.add(eventId);
        if (!accepting) return { status: 503 };
        delivered.add(eventId);
        return { status: 200 };
      });

      const first = await startServe(env);
      servers.push(first);
      // The key is printed just after the 'listening' log line.
      const key = await waitUntil(
        'the first admin key on stdout',
        () => /Admin API key \(shown once, keep it safe\): (\S+)/.exec(first.stdout())?.[1],
      );
      const hook = await first.fetch('POST', '/v1/webhooks', {
        key,
        body: { url: `${receiver.rx.url}/crash`, events: ['*'], secret: 'crash-secret' },
      });
      assert.equal(hook.status, 201);
      for (let i = 0; i < WRITES; i++) {
        const res = await first.fetch('POST', '/v1/data', { key, body: { title: `w${i}`, type: 'note' } });
        assert.equal(res.status, 201);
      }
      // Every event has been tried and refused once, so each delivery now waits for a retry.
      await waitUntil('a refused first attempt of each event', () => attempted.size >= WRITES, 20_000);
      assert.equal(delivered.size, 0);
      assert.equal(await first.stop('SIGKILL'), null, 'killed, not exited');

      accepting = true;
      const second = await startServe(env);
      servers.push(second);
      await waitUntil('every event to be delivered', () => delivered.size >= WRITES, 30_000);
      assert.equal(await second.stop('SIGTERM'), 0);

      const database = openDatabase(db.config);
      try {
        await migrate(database);
        const events = await database.db.selectFrom('events').select('id').execute();
        assert.equal(events.length, WRITES);
        assert.deepEqual([...delivered].sort(), events.map((e) => e.id).sort());
        const deliveries = await database.db.selectFrom('webhook_deliveries').select('status').execute();
        assert.deepEqual(
          deliveries.map((d) => d.status),
          new Array(WRITES).fill('succeeded'),
        );
      } finally {
        await database.close();
      }
    });
  });
}
