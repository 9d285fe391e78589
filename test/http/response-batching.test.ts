import assert from 'node:assert/strict';
import fs from 'node:fs';
import type { Server } from 'node:http';
import https from 'node:https';
import net, { type AddressInfo, type Socket } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import Fastify, { type FastifyInstance } from 'fastify';
import type { Config } from '../../src/config.ts';
import { installResponseBatching } from '../../src/http/response-batching.ts';
import { HOLD_MS, holdWritesPerTurn } from '../../src/lib/held-writes.ts';
import { loadTls } from '../../src/lib/tls.ts';
import { searchData } from '../../src/modules/search/service.ts';
import { describeEachDatabase } from '../helpers/harness.ts';
import { dispatched, loopbackPair, receivedUntilClose } from '../helpers/sockets.ts';

/**
 * Opens `count` connections to `server` and resolves once the server has taken them all and is
 * reading from them (which takes it a turn or two after accepting).
 */
async function connections(server: Server, count: number): Promise<Socket[]> {
  const port = (server.address() as AddressInfo).port;
  let accepted = 0;
  const taken = new Promise<void>((resolve) => {
    const onConnection = () => {
      if (++accepted < count) return;
      server.removeListener('connection', onConnection);
      resolve();
    };
    server.on('connection', onConnection);
  });
  const sockets = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<Socket>((resolve, reject) => {
          const socket = net.connect(port, '127.0.0.1', () => resolve(socket));
          socket.on('error', reject);
        }),
    ),
  );
  await taken;
  await new Promise((resolve) => setTimeout(resolve, 20));
  return sockets;
}

/**
 * Sends one request on each socket in the same tick: each is in the kernel before the server
 * polls again, so the server reads them all in one event-loop turn.
 */
function sendTogether(sockets: Socket[], paths: string[]): Promise<string[]> {
  const answers = sockets.map(receivedUntilClose);
  sockets.forEach((socket, i) => {
    socket.write(`GET ${paths[i]} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`);
  });
  return Promise.all(answers);
}

/** Whether nothing has left a connection that carries one response, which is finished. */
const isHeld = (socket: Socket) => dispatched(socket) === 0;

/** A turn marker: the same object for every call within one event-loop turn. */
function turnMarker(): () => object {
  let current: object | undefined;
  return () => {
    if (!current) {
      const turn = {};
      current = turn;
      setImmediate(() => {
        if (current === turn) current = undefined;
      });
    }
    return current;
  };
}

describe('responses finished in one event-loop turn are written together', () => {
  let app: FastifyInstance;
  let slowApp: FastifyInstance;
  const turn = turnMarker();
  /** What each handler saw, in the order the requests were served. */
  let seen: { id: string; turn: object; socket: Socket; othersHeld: boolean[]; ownHeld?: boolean }[] = [];
  let endOfTurn: { id: string; held: boolean }[] = [];

  /** A test app: `holdMs` long enough that a slow test machine never reaches it, or HOLD_MS. */
  const testApp = async (holdMs: number) => {
    const server = Fastify();
    installResponseBatching(server, holdMs);
    server.get<{ Querystring: { id: string; busy?: string; destroy?: string } }>('/t', (request, reply) => {
      const socket = request.raw.socket as Socket;
      const busyUntil = performance.now() + Number(request.query.busy ?? 0);
      while (performance.now() < busyUntil);
      const entry = {
        id: request.query.id,
        turn: turn(),
        socket,
        othersHeld: [] as boolean[],
        ownHeld: undefined as boolean | undefined,
      };
      seen.push(entry);
      reply.send({ id: request.query.id, pad: 'x'.repeat(64) });
      // Once the response is finished: whose bytes are still waiting?
      process.nextTick(() => {
        entry.ownHeld = isHeld(socket);
        entry.othersHeld = seen.filter((e) => e !== entry).map((e) => isHeld(e.socket));
        if (request.query.destroy) socket.destroy();
      });
      setImmediate(() => endOfTurn.push({ id: request.query.id, held: isHeld(socket) }));
      return reply;
    });
    await server.listen({ host: '127.0.0.1', port: 0 });
    return server;
  };
  before(async () => {
    app = await testApp(60_000);
    slowApp = await testApp(HOLD_MS);
  });
  after(async () => {
    await app.close();
    await slowApp.close();
  });
  /**
   * Sends one request per path, each on a connection of its own, all in one tick, and returns
   * the answers once the server has read them all in one turn. A loaded machine can deliver one
   * a turn late (loopback traffic handed to ksoftirqd): that round is sent again, up to 5 times.
   */
  const servedTogether = async (server: FastifyInstance, paths: string[]): Promise<string[]> => {
    for (let round = 0; round < 5; round++) {
      seen = [];
      endOfTurn = [];
      const answers = await sendTogether(await connections(server.server, paths.length), paths);
      if (seen.length === paths.length && seen.every((e) => e.turn === seen[0]!.turn)) return answers;
    }
    assert.fail('the requests were never served in one turn');
  };

  it('a response waits for the end of its turn, beside the others of that turn, then all are sent', async () => {
    const answers = await servedTogether(app, ['/t?id=a', '/t?id=b', '/t?id=c']);
    assert.deepEqual(
      seen.map((e) => e.ownHeld),
      [true, true, true],
      'each response is held once it is finished',
    );
    assert.deepEqual(
      seen[2]!.othersHeld,
      [true, true],
      'the first two are still held when the third is finished',
    );
    assert.deepEqual(
      endOfTurn.map((e) => e.held),
      [false, false, false],
      'all are released when the turn ends',
    );
    for (const [i, id] of ['a', 'b', 'c'].entries()) {
      assert.match(answers[i]!, /^HTTP\/1\.1 200 /);
      assert.equal(JSON.parse(answers[i]!.slice(answers[i]!.indexOf('\r\n\r\n') + 4)).id, id);
    }
  });

  it(`a turn of slow requests holds no response longer than ${HOLD_MS} ms past its finish and the next's`, async () => {
    const busy = HOLD_MS * 3;
    const answers = await servedTogether(slowApp, [`/t?id=a&busy=${busy}`, `/t?id=b&busy=${busy}`]);
    assert.equal(seen[0]!.ownHeld, true, 'the first is held when it is finished');
    assert.deepEqual(seen[1]!.othersHeld, [false], 'the first went out when the second was finished');
    assert.equal(seen[1]!.ownHeld, true, 'the second is held until the turn ends');
    assert.deepEqual(
      answers.map((a) => a.slice(0, 15)),
      ['HTTP/1.1 200 OK', 'HTTP/1.1 200 OK'],
    );
  });

  it('a connection destroyed while its response is held sends it first, and the others are undisturbed', async () => {
    const answers = await servedTogether(app, ['/t?id=a&destroy=1', '/t?id=b']);
    assert.equal(seen[0]!.ownHeld, true, 'precondition: the answer was held when the socket was destroyed');
    // As unheld: an answer written and then destroyed at once (as for unparseable HTTP) arrives.
    assert.match(answers[0]!, /^HTTP\/1\.1 200 /);
    assert.match(answers[1]!, /^HTTP\/1\.1 200 /);
    const [again] = await sendTogether(await connections(app.server, 1), ['/t?id=c']);
    assert.match(again!, /^HTTP\/1\.1 200 /);
  });
});

describe('response batching over HTTPS', () => {
  let app: FastifyInstance;
  const heldAfterSend: boolean[] = [];
  let dataDir: string;
  let cert: Buffer;
  before(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ads-batching-'));
    const tls = await loadTls({ dataDir } as Config);
    cert = tls.cert;
    app = Fastify({ https: { key: tls.key, cert: tls.cert } });
    installResponseBatching(app);
    app.get<{ Querystring: { n: string; big?: string } }>('/n', (request, reply) => {
      const n = Number(request.query.n);
      // Bodies of 0 to 19 KB, and some of 2 MB, which the socket cannot take in one write.
      const socket = request.raw.socket as Socket;
      const before = dispatched(socket);
      reply.send({ n, body: 'y'.repeat(request.query.big ? 2 * 1024 * 1024 : n * 97) });
      process.nextTick(() => heldAfterSend.push(dispatched(socket) === before));
      return reply;
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
  });
  after(async () => {
    await app.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('many requests at once on keep-alive connections each get their own whole answer', async () => {
    const port = (app.server.address() as AddressInfo).port;
    const agent = new https.Agent({ keepAlive: true, maxSockets: 8, ca: cert });
    const big = (n: number) => n % 50 === 7;
    const get = (n: number) =>
      new Promise<{ n: number; body: string }>((resolve, reject) => {
        const url = `/n?n=${n}${big(n) ? '&big=1' : ''}`;
        https
          .get({ host: '127.0.0.1', port, path: url, agent, servername: 'localhost' }, (res) => {
            let data = '';
            res.setEncoding('utf8');
            res.on('data', (c) => {
              data += c;
            });
            res.on('end', () => resolve(JSON.parse(data)));
          })
          .on('error', reject);
      });
    const results = await Promise.all(Array.from({ length: 200 }, (_, n) => get(n)));
    agent.destroy();
    for (const [n, r] of results.entries()) {
      assert.equal(r.n, n);
      assert.equal(r.body.length, big(n) ? 2 * 1024 * 1024 : n * 97);
    }
    assert.equal(heldAfterSend.length, 200);
    assert.ok(heldAfterSend.every(Boolean), 'every answer waited in its TLS socket for the end of its turn');
  });
});

describeEachDatabase('the service batches its responses', (h) => {
  before(() => h.app.listen({ host: '127.0.0.1', port: 0 }));

  it('a response finished in a turn is still held when the next request of that turn arrives', async () => {
    let arrivals: { turn: object; socket: Socket; earlierHeld: boolean[] }[] = [];
    const turn = turnMarker();
    const onRequest = (req: { socket: Socket }) => {
      arrivals.push({
        turn: turn(),
        socket: req.socket,
        earlierHeld: arrivals.map((a) => isHeld(a.socket)),
      });
    };
    h.app.server.prependListener('request', onRequest);
    try {
      // Unknown paths outside /v1 are answered without the database, so within the request's turn.
      // A round whose two requests were read in different turns (a loaded machine) is sent again.
      let answers: string[] = [];
      for (let round = 0; round < 5; round++) {
        arrivals = [];
        const sockets = await connections(h.app.server, 2);
        answers = await sendTogether(sockets, ['/no-such-path-a', '/no-such-path-b']);
        if (arrivals.length === 2 && arrivals[0]!.turn === arrivals[1]!.turn) break;
      }
      assert.equal(
        arrivals[0]!.turn,
        arrivals[1]!.turn,
        'precondition: both requests were served in one turn',
      );
      assert.deepEqual(
        arrivals[1]!.earlierHeld,
        [true],
        'the first 404 is held while the second request is read',
      );
      for (const a of answers) {
        assert.match(a, /^HTTP\/1\.1 404 /);
        assert.equal(JSON.parse(a.slice(a.indexOf('\r\n\r\n') + 4)).error.code, 'not_found');
      }
    } finally {
      h.app.server.removeListener('request', onRequest);
    }
  });

  it('an answer held, then unparseable HTTP on the same connection: both answers arrive (404, then 400)', async () => {
    const [socket] = await connections(h.app.server, 1);
    const received = receivedUntilClose(socket!);
    // One packet: a request the service answers (held), then bytes Node cannot parse, whose 400 is
    // written behind it just before the connection is destroyed.
    socket!.write('GET /no-such-path HTTP/1.1\r\nHost: localhost\r\n\r\nBLAH BLAH\r\n\r\n');
    const data = await received;
    const statuses = [...data.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => m[1]);
    assert.deepEqual(statuses, ['404', '400'], data);
  });

  it('a search first sends the answers held in its turn (it can run long, synchronously on SQLite)', async () => {
    const acc = await h.account('enterprise');
    const pair = await loopbackPair();
    try {
      holdWritesPerTurn(pair.server, 60_000);
      pair.server.write('answer');
      assert.equal(dispatched(pair.server), 0, 'precondition: the answer is held');
      const search = searchData(h.ctx, acc.id, { q: 'anything', page: 1, limit: 20 });
      assert.equal(dispatched(pair.server), 6, 'sent before the search ran');
      assert.equal((await search).total, 0);
    } finally {
      pair.close();
    }
  });
});
