import type { IncomingMessage, ServerResponse } from 'node:http';
import tls from 'node:tls';
import type { FastifyInstance } from 'fastify';

interface ConsumedParser {
  _consumed?: boolean;
  pause(): void;
  unconsume(): void;
}

/**
 * Keeps Node's HTTP parser on an HTTPS connection from refusing the bytes its TLS handle has
 * already decrypted when the connection is paused.
 *
 * When a request arrives before the previous answer on its connection has drained (an answer over
 * the socket's 16 KB buffer, and a client quick to send the next request on a kept-alive
 * connection), Node pauses the socket and its parser until the answer drains. The parser reads
 * straight from the TLS handle ("consumed"), which goes on delivering what it has decrypted from
 * the same read: the paused parser refused it (`HPE_PAUSED`), and the request was answered as
 * malformed HTTP (400) with the connection reset while the client was still sending its body. A
 * review saw 20-40 % of 32 KB PATCHes on one kept-alive connection lost so (Node 20.20).
 *
 * Here, when Node pauses such a parser, the parser first stops reading from the handle (as Node
 * does for an upgrade, at the same point): what is still decrypted then goes to the socket's own
 * buffer, which a paused socket holds until the answer drains, and the parser reads it through
 * the socket's `data` events from then on. Node's bound on pipelined requests stays (a client that
 * sends hundreds of requests and reads no answer gets no more parsed); not pausing the parser at
 * all let one such connection hold hundreds of answers (450 MB of /v1/openapi.json). Feeding every
 * connection through `data` events from the start cost 4-9 % of GET throughput; only connections
 * that are ever paused do here. Plain HTTP (behind a proxy) is left as Node has it: it did not
 * lose requests so.
 */
export function keepTlsParsersReading(app: FastifyInstance): void {
  if (!(app.server instanceof tls.Server)) return;
  // After Node's own listener, which gives the socket its parser.
  app.server.on('secureConnection', (socket: tls.TLSSocket) => {
    const parser = (socket as unknown as { parser?: ConsumedParser | null }).parser;
    if (!parser?._consumed) return;
    const pause = parser.pause;
    // On the instance, and only while it is this socket's: Node pools parsers across connections.
    parser.pause = function (this: ConsumedParser) {
      if (this._consumed) {
        this.unconsume();
        this._consumed = false;
      }
      pause.call(this);
    };
    socket.once('close', () => {
      if (parser.pause !== pause) delete (parser as Partial<ConsumedParser>).pause;
    });
  });
}

/** Requests one connection may have waiting for their answers at once (HTTP/1.1 pipelining). */
export const MAX_PIPELINED = 32;

/**
 * Closes a connection that has more than MAX_PIPELINED requests waiting for their answers. Node
 * parses every request in what it has read before it stops reading for an undrained answer, so a
 * client that sends a few kilobytes of small requests for a large answer (`/v1/openapi.json`, 231
 * KB) and reads nothing made the server build and hold hundreds of answers for it: 300-450 MB per
 * connection, no key needed. No real client pipelines that deep (browsers and Node's agents do not
 * pipeline at all).
 */
export function boundPipelinedRequests(app: FastifyInstance, max = MAX_PIPELINED): void {
  const waiting = new WeakMap<object, number>();
  app.server.prependListener('request', (req: IncomingMessage, res: ServerResponse) => {
    const socket = req.socket;
    const n = (waiting.get(socket) ?? 0) + 1;
    waiting.set(socket, n);
    res.once('close', () => waiting.set(socket, (waiting.get(socket) ?? 1) - 1));
    if (n > max) socket.destroy();
  });
}
