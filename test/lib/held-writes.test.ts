import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { holdWritesPerTurn, releaseHeldWrites } from '../../src/lib/held-writes.ts';
import { dispatched, loopbackPair, receivedUntilClose } from '../helpers/sockets.ts';

const endOfTurn = () => new Promise((resolve) => setImmediate(resolve));

describe('writes held until the end of the turn', () => {
  it('a write callback that throws as it is released: the error goes on, the others still go out', async () => {
    const a = await loopbackPair();
    const b = await loopbackPair();
    try {
      holdWritesPerTurn(a.server, 60_000);
      holdWritesPerTurn(b.server, 60_000);
      a.server.write('a', () => {
        throw new Error('boom');
      });
      b.server.write('bb');
      assert.deepEqual([dispatched(a.server), dispatched(b.server)], [0, 0], 'precondition: both held');
      assert.throws(() => releaseHeldWrites(), /boom/);
      assert.equal(dispatched(a.server), 1);
      await endOfTurn();
      assert.equal(dispatched(b.server), 2, 'the connection after the throw went out at the turn end');
      b.server.write('ccc');
      await endOfTurn();
      assert.equal(dispatched(b.server), 5, 'and its later writes are held and sent as usual');
    } finally {
      a.close();
      b.close();
    }
  });

  it('destroy() on a connection holding a write sends it and the writes queued behind it first', async () => {
    const pair = await loopbackPair();
    const data = receivedUntilClose(pair.client);
    holdWritesPerTurn(pair.server, 60_000);
    pair.server.write('first ');
    pair.server.write('second');
    assert.equal(dispatched(pair.server), 0, 'precondition: held');
    pair.server.destroy();
    assert.equal(await data, 'first second');
  });
});
