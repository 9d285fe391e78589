import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import tls from 'node:tls';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import type { Logger } from 'pino';
import { buildApp } from './app.ts';
import { type Config, checkSettingPaths, defaultPublicUrl, listenError, originOf } from './config.ts';
import type { AppContext } from './context.ts';
import { type Database, migrateLogged, openDatabase } from './db/database.ts';
import { checkSecretKey } from './lib/secret-check.ts';
import { systemClock } from './lib/time.ts';
import { loadTls } from './lib/tls.ts';
import { anyAccount } from './modules/accounts/repo.ts';
import { type CreatedAccount, createAccount } from './modules/accounts/service.ts';
import { createRateLimiter } from './ratelimit/limiter.ts';
import { startWorkers, stopWorkers } from './workers.ts';

export interface RunningServer {
  app: FastifyInstance;
  url: string;
  database: Database;
  bootstrap: CreatedAccount | null;
  close(): Promise<void>;
}

/**
 * Opens and migrates the database, serves HTTPS (or plain HTTP behind a trusted proxy), and once
 * serving creates a first account on an empty database. The caller owns signals and printing.
 */
export async function startServer(config: Readonly<Config>, logger: Logger): Promise<RunningServer> {
  // The TLS pair is checked when named even behind a trusted proxy (which serves plain HTTP and does
  // not use it): a setting that names files that cannot be read is a mistake either way.
  checkSettingPaths(config, { tls: true });
  const database = openDatabase(config.database);
  try {
    await migrateLogged(database, logger);
    await checkSecretKey(config, database);
    const tls = config.trustProxy ? undefined : await loadTls(config);
    if (tls?.generated)
      logger.info({ cert: tls.generated }, 'generated a self-signed development certificate');
    const rateLimiter = createRateLimiter({
      redis: config.redisUrl ? { url: config.redisUrl, keyPrefix: 'ads:rl' } : undefined,
      now: systemClock,
      logger: logger.child({ component: 'rate-limit' }),
    });
    const ctx: AppContext = { config, database, clock: systemClock, logger, rateLimiter };
    const app = await buildApp(ctx, tls ? { https: { key: tls.key, cert: tls.cert } } : {});
    const drain = trackConnections(app.server);
    await app.listen({ host: config.host, port: config.port }).catch((err: unknown) => {
      throw listenError(err, config);
    });
    const address = app.server.address();
    const port = typeof address === 'object' && address ? address.port : config.port;
    if (!config.publicUrlGiven && config.port === 0) {
      // ADS_PORT=0: links in emails and the OpenAPI document name the port the system gave us.
      ctx.config = Object.freeze({ ...config, publicUrl: defaultPublicUrl(config.host, port) });
    }
    const workers = await startWorkers(ctx);
    // The first account of an empty database is made only now that the server runs, so its key,
    // which is shown once, is never made by a start that then fails (port taken, bad TLS files…)
    // and so never shown at all.
    const bootstrap = await createFirstAccount(database);
    const url = originOf(tls ? 'https' : 'http', config.host, port);
    logger.info({ url: `${url}/v1`, database: database.dialect }, 'listening');
    return {
      app,
      url,
      database,
      bootstrap,
      close: async () => {
        // The workers take no new work from now on and finish what they hold, while the HTTP side
        // stops accepting connections and ends the open ones without a reset or a 503. Stopped only
        // after the drain, a worker went on claiming deliveries for as long as a slow request kept
        // the drain open, and attempts begun late were cut off at the drain timeout and sent again
        // by another process. What requests still in flight queue waits, durable, for the next
        // worker.
        const workersStopped = stopWorkers(workers).then(
          () => null,
          (err: unknown) => ({ err }),
        );
        await drain();
        await app.close();
        const failed = await workersStopped;
        if (failed) throw failed.err;
        await database.close();
      },
    };
  } catch (err) {
    await database.close().catch(() => {});
    throw err;
  }
}

/** Keys of the PostgreSQL advisory lock that makes the first account once ("ads-" "boot"). */
const FIRST_ACCOUNT_LOCK = [0x6164_732d, 0x626f_6f74] as const;

/**
 * The default account of an empty database, made once: on PostgreSQL several processes may start
 * at once on one empty database, so the check and the creation run under an advisory lock (the
 * second process then finds the first one's account). SQLite has one process per file.
 */
async function createFirstAccount(database: Database): Promise<CreatedAccount | null> {
  const make = async () =>
    (await anyAccount(database.db))
      ? null
      : createAccount(database, { name: 'Default account', adminEmail: 'admin@example.com' });
  if (database.dialect !== 'postgres') return make();
  return database.db.connection().execute(async (conn) => {
    const [a, b] = FIRST_ACCOUNT_LOCK;
    await sql`select pg_advisory_lock(${a}::int, ${b}::int)`.execute(conn);
    try {
      return await make();
    } finally {
      await sql`select pg_advisory_unlock(${a}::int, ${b}::int)`.execute(conn);
    }
  });
}

/** During a drain, a connection idle this long (no request in flight) is ended with a FIN. */
const DRAIN_IDLE_MS = 2000;
/** An ended connection the client has not closed by then is destroyed. */
const DRAIN_LINGER_MS = 1000;

/**
 * Tracks the server's connections and returns the drain: stop accepting connections (without
 * dropping idle keep-alive ones at once as `server.close()` does, which resets the request a
 * client is writing at that moment), answer every request still arriving normally with
 * `Connection: close` so each busy connection ends after one more answer, and end (FIN, never RST)
 * a connection only after it has been idle for {@link DRAIN_IDLE_MS}. Resolves when none is left.
 */
function trackConnections(server: Server): () => Promise<void> {
  type Conn = { res: ServerResponse | null; idleSince: number; endedAt: number | null };
  const open = new Map<net.Socket, Conn>();
  let draining = false;
  const track = (socket: net.Socket) => {
    let c = open.get(socket);
    if (!c) {
      c = { res: null, idleSince: Date.now(), endedAt: null };
      open.set(socket, c);
      socket.once('close', () => open.delete(socket));
    }
    return c;
  };
  // With TLS, requests arrive on the TLS socket, which exists once the handshake is done.
  server.on(server instanceof tls.Server ? 'secureConnection' : 'connection', track);
  // Ahead of Fastify's listener, so the header is set before any answer is written.
  server.prependListener('request', (req: IncomingMessage, res: ServerResponse) => {
    const c = track(req.socket);
    c.res = res;
    if (draining) res.setHeader('connection', 'close');
    res.once('close', () => {
      if (c.res === res) {
        c.res = null;
        c.idleSince = Date.now();
      }
    });
  });

  return async () => {
    draining = true;
    const started = Date.now();
    for (const c of open.values()) {
      if (c.res && !c.res.headersSent) c.res.setHeader('connection', 'close');
      // Idle time counts from the drain's start: a client may be about to reuse its connection.
      c.idleSince = Math.max(c.idleSince, started);
    }
    // net.Server#close only stops the listener; http(s).Server#close would also drop idle connections.
    net.Server.prototype.close.call(server);
    // Also wait for connections still in their TLS handshake: they are tracked once it completes.
    const connections = () => new Promise<number>((r) => server.getConnections((_err, n) => r(n ?? 0)));
    for (;;) {
      if (open.size === 0 && (await connections()) === 0) break;
      const now = Date.now();
      for (const [socket, c] of open) {
        if (c.res) continue;
        if (c.endedAt === null && now - c.idleSince >= DRAIN_IDLE_MS) {
          c.endedAt = now;
          socket.end();
        } else if (c.endedAt !== null && now - c.endedAt >= DRAIN_LINGER_MS) socket.destroy();
      }
      await sleep(20);
    }
  };
}
