import tls from 'node:tls';
import type { FastifyInstance } from 'fastify';
import { HOLD_MS, holdWritesPerTurn } from '../lib/held-writes.ts';

/**
 * Writes the responses of one event-loop turn together, when the turn ends, instead of each as
 * it is finished (src/lib/held-writes.ts).
 *
 * A server answering many connections finishes several responses per turn. Written one by one,
 * each send wakes its client apart; where clients share the server's cores (the benchmark's load
 * generator, a proxy on the same host) that costs CPU on both sides. Held until the turn's end,
 * they leave in one burst.
 *
 * The hold is below Fastify and Node's HTTP layer, in each connection's stream. For Fastify and
 * Node the response is finished (`reply.sent`, `res.writableEnded`); its bytes, the `finish` event
 * and the `onResponse` hook (the log line and its `ms`) come at the turn's end.
 */
export function installResponseBatching(app: FastifyInstance, holdMs = HOLD_MS): void {
  // HTTPS writes its responses to the TLS socket, plain HTTP to the TCP one.
  app.server.on(app.server instanceof tls.Server ? 'secureConnection' : 'connection', (socket) =>
    holdWritesPerTurn(socket, holdMs),
  );
}
