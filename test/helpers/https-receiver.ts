import { setMaxListeners } from 'node:events';
import type { ServerResponse } from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { generate } from 'selfsigned';

/** One request as the receiver saw it. */
export interface ReceivedRequest {
  method: string;
  url: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  receivedAt: Date;
}

/** How the receiver answers one request; every field is optional (default 200, empty body). */
export interface ReceiverResponse {
  status?: number;
  headers?: Record<string, string>;
  /** Wait this long before answering (to provoke client timeouts). */
  delayMs?: number;
  body?: string;
  /**
   * Send the status, the headers and the first half of `body` at once, and the rest this much
   * later (an answer whose last byte comes late).
   */
  bodyDelayMs?: number;
  /** Send the status, the headers and the first half of `body`, then drop the connection. */
  breakBody?: boolean;
}

/** Chooses the response for a request; may be async. */
export type ReceiverHandler = (req: ReceivedRequest) => ReceiverResponse | Promise<ReceiverResponse>;

/** A running local HTTPS receiver. */
export interface HttpsReceiver {
  /** Base URL `https://localhost:<port>` (the certificate also covers 127.0.0.1 and ::1). */
  url: string;
  port: number;
  /** PEM of the self-signed certificate, to pass as an extra trust anchor. */
  ca: string;
  /** Every request received so far, in arrival order. */
  requests: ReceivedRequest[];
  setHandler(fn: ReceiverHandler): void;
  /** Resolves with the requests once at least `count` arrived; rejects after `timeoutMs`. */
  waitFor(count: number, timeoutMs?: number): Promise<ReceivedRequest[]>;
  close(): Promise<void>;
}

const MAX_BODY_BYTES = 1024 * 1024;

/** Generates a self-signed certificate for localhost, 127.0.0.1, ::1 and any extra DNS names. */
async function makeCertificate(dnsNames: string[]): Promise<{ key: string; cert: string }> {
  const notBefore = new Date(Date.now() - 60_000); // tolerate small clock differences
  const pems = await generate([{ name: 'commonName', value: 'localhost' }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    notBeforeDate: notBefore,
    notAfterDate: new Date(notBefore.getTime() + 24 * 3600 * 1000),
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true },
      { name: 'extKeyUsage', serverAuth: true },
      {
        name: 'subjectAltName',
        altNames: [
          { type: 2, value: 'localhost' },
          ...dnsNames.map((value) => ({ type: 2 as const, value })),
          { type: 7, ip: '127.0.0.1' },
          { type: 7, ip: '::1' },
        ],
      },
    ],
  });
  return { key: pems.private, cert: pems.cert };
}

/** Options for {@link startHttpsReceiver}. */
export interface HttpsReceiverOptions {
  handler?: ReceiverHandler;
  /** Extra DNS names for the certificate (e.g. a name a test resolves itself). */
  dnsNames?: string[];
}

/** Starts a real HTTPS server on 127.0.0.1 (random port) that records requests and answers as told. */
export async function startHttpsReceiver(opts: HttpsReceiverOptions = {}): Promise<HttpsReceiver> {
  const { key, cert } = await makeCertificate(opts.dnsNames ?? []);
  const requests: ReceivedRequest[] = [];
  let handler: ReceiverHandler = opts.handler ?? (() => ({ status: 200 }));
  const abort = new AbortController();
  // Every delayed answer waits on this one signal (close() cuts them all short), and a test may hold
  // more than Node's default of 10 at once: not a leak, each listener goes when its wait ends.
  setMaxListeners(0, abort.signal);

  const server = https.createServer({ key, cert }, (req, res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) req.destroy(new Error('receiver: body too large'));
      else chunks.push(chunk);
    });
    req.on('error', () => res.destroy());
    req.on('end', () => {
      const recorded: ReceivedRequest = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: { ...req.headers },
        body: Buffer.concat(chunks).toString('utf8'),
        receivedAt: new Date(),
      };
      requests.push(recorded);
      void respond(recorded, res);
    });
  });

  const respond = async (recorded: ReceivedRequest, res: ServerResponse) => {
    try {
      const plan = await handler(recorded);
      if (plan.delayMs) await sleep(plan.delayMs, undefined, { signal: abort.signal });
      if (res.destroyed) return;
      res.writeHead(plan.status ?? 200, plan.headers ?? {});
      if (plan.breakBody) {
        const body = plan.body ?? '';
        res.write(body.slice(0, body.length >> 1), () => setTimeout(() => res.socket?.destroy(), 50));
        return;
      }
      if (plan.bodyDelayMs) {
        const body = plan.body ?? '';
        res.write(body.slice(0, body.length >> 1));
        await sleep(plan.bodyDelayMs, undefined, { signal: abort.signal });
        if (res.destroyed) return;
        res.end(body.slice(body.length >> 1));
        return;
      }
      res.end(plan.body ?? '');
    } catch {
      if (!res.destroyed && !res.headersSent) res.writeHead(500).end();
      else res.destroy();
    }
  };

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;

  return {
    url: `https://localhost:${port}`,
    port,
    ca: cert,
    requests,
    setHandler(fn) {
      handler = fn;
    },
    async waitFor(count, timeoutMs = 5000) {
      const deadline = Date.now() + timeoutMs;
      while (requests.length < count) {
        if (Date.now() > deadline) {
          throw new Error(
            `receiver: expected ${count} request(s) within ${timeoutMs} ms, got ${requests.length}`,
          );
        }
        await sleep(10);
      }
      return requests.slice();
    },
    async close() {
      abort.abort();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
