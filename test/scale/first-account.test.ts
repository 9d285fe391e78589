import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { loadConfig } from '../../src/config.ts';
import { openDatabase } from '../../src/db/database.ts';
import { type RunningServer, startServer } from '../../src/server.ts';
import { createTestDatabase, postgresSkipReason } from '../helpers/databases.ts';

// README: the first start on an empty database creates one default account. Several `ads serve`
// processes starting at once on one empty PostgreSQL database must still make only one.
describe('the first account, with several servers starting at once [postgres]', {
  skip: postgresSkipReason(),
}, () => {
  let created: Awaited<ReturnType<typeof createTestDatabase>>;
  before(async () => {
    created = await createTestDatabase('postgres');
  });
  after(() => created.drop());

  it('is made once: one server reports it, the others find it', async () => {
    const config = {
      ...loadConfig({ ADS_DATA_DIR: created.dataDir, ADS_PORT: '0', ADS_LOG_LEVEL: 'silent' }),
      database: created.config,
    };
    const servers: RunningServer[] = await Promise.all(
      Array.from({ length: 4 }, () => startServer(config, pino({ level: 'silent' }))),
    );
    try {
      assert.equal(servers.filter((s) => s.bootstrap !== null).length, 1);
      const database = openDatabase(created.config);
      try {
        const accounts = await database.db.selectFrom('accounts').select('id').execute();
        assert.equal(accounts.length, 1);
      } finally {
        await database.close();
      }
    } finally {
      await Promise.all(servers.map((s) => s.close()));
    }
  });
});
