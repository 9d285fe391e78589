import tls from 'node:tls';
import type { FastifyInstance } from 'fastify';

interface ConsumedParser {
  _consumed?: boolean;
  pause(): void;
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
 * Here such a parser is not paused: the socket still is (its handle stops reading, which is the
 * backpressure that matters), and the little already decrypted is parsed as it comes, the next
 * request queued behind the answer being written, as Node queues pipelined requests. Feeding the
 * parser through the socket's `data` events instead (which a paused socket holds back) also fixed
 * it, but cost 4-9 % of GET throughput; this costs nothing per request. Plain HTTP (behind a
 * proxy) is left as Node has it: it did not lose requests so.
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
      if (!this._consumed) pause.call(this);
    };
    socket.once('close', () => {
      if (parser.pause !== pause) delete (parser as Partial<ConsumedParser>).pause;
    });
  });
}
