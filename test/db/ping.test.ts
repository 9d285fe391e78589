import assert from 'node:assert/strict';
import net from 'node:net';
import { it } from 'node:test';
import { openDatabase, ping } from '../../src/db/database.ts';

// decisions §9 readiness: a database that stops answering without refusing the connection (a
// partition, a hung server) must make /readyz say 503, not leave the probe hanging.
it('ping answers false when the database never answers, instead of waiting for ever', {
  timeout: 15_000,
}, async () => {
  const held: net.Socket[] = [];
  const silent = net.createServer((socket) => {
    held.push(socket); // accepts, reads, never answers
  });
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  const port = (silent.address() as net.AddressInfo).port;
  const database = openDatabase({ dialect: 'postgres', url: `postgres://ads@127.0.0.1:${port}/ads` });
  try {
    assert.equal(await ping(database, 300), false);
  } finally {
    for (const s of held) s.destroy();
    silent.close();
    await database.close().catch(() => {});
  }
});
