import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import BetterSqlite3 from 'better-sqlite3';
import { Agent, request } from 'undici';
import { runAds, type ServeProcess, startServe } from '../helpers/process.ts';
import { startReceiverWithCa, waitUntil } from '../webhooks/fixtures.ts';
import { startWorkerProcess } from '../webhooks/worker-process.ts';

/** Long form (`npm run test:reliability`): 10 SIGTERM cycles; `npm test` runs one. */
const LONG = process.env.ADS_RELIABILITY_LONG === '1';
const CYCLES = LONG ? 10 : 1;
const CLIENTS = 40;

interface Tally {
  /** id -> last acknowledged title. */
  acknowledged: Map<string, string>;
  /** Objects whose last PATCH was cut off by the refusal of a new connection: either title is fine. */
  uncertain: Set<string>;
  requests: number;
  /** New connections refused after the listener closed: the request was never sent. */
  refused: number;
  /** Resets, hang-ups, 5xx or any other unexpected answer: must stay empty. */
  failures: string[];
}

// Errors that mean the request never left the client: the listener is closed to new connections.
const NEVER_SENT = new Set(['ECONNREFUSED']);

/** One keep-alive client looping over writes and reads until the server refuses a new connection. */
async function client(
  url: string,
  key: string,
  agent: Agent,
  n: number,
  t: Tally,
  stop: { now: boolean },
  onAnswer: () => void,
) {
  const mine: string[] = [];
  for (let i = 0; !stop.now; i++) {
    const kind = mine.length === 0 || i % 4 === 0 ? 'create' : (['patch', 'get', 'list'] as const)[i % 3]!;
    const target = mine[(i * 7) % Math.max(1, mine.length)];
    const title = `c${n} ${kind} ${i}`;
    const [method, p, body] =
      kind === 'create'
        ? ['POST', '/v1/data', { title, type: 'note', content: 'shutdown '.repeat(40) }]
        : kind === 'patch'
          ? ['PATCH', `/v1/data/${target}`, { title }]
          : kind === 'get'
            ? ['GET', `/v1/data/${target}`, undefined]
            : ['GET', '/v1/data?limit=5', undefined];
    if (kind === 'patch') t.uncertain.add(target!);
    t.requests++;
    try {
      const res = await request(`${url}${p}`, {
        method: method as 'POST',
        dispatcher: agent,
        headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
      const text = await res.body.text();
      onAnswer();
      const want = kind === 'create' ? 201 : 200;
      if (res.statusCode !== want) {
        t.failures.push(`${method} ${p} -> ${res.statusCode} ${text.slice(0, 200)}`);
        return;
      }
      if (kind === 'create') {
        const id = JSON.parse(text).data.id as string;
        mine.push(id);
        t.acknowledged.set(id, title);
      } else if (kind === 'patch') {
        t.uncertain.delete(target!);
        t.acknowledged.set(target!, title);
      }
    } catch (err) {
      const e = err as NodeJS.ErrnoException & { cause?: NodeJS.ErrnoException };
      const code = e.code ?? e.cause?.code ?? '';
      if (NEVER_SENT.has(code) || NEVER_SENT.has(e.cause?.code ?? '')) {
        t.refused++;
      } else {
        if (kind === 'patch') t.uncertain.delete(target!); // counted as a failure, not excused
        t.failures.push(`${method} ${p} -> ${code} ${e.message}`);
      }
      return;
    }
  }
}

async function firstStart(env: Record<string, string>): Promise<{ server: ServeProcess; key: string }> {
  const server = await startServe(env);
  const key = /Admin API key \(shown once, keep it safe\): (ads_\S+)/.exec(server.stdout())?.[1] ?? '';
  const account = /Created account (acc_\S+)/.exec(server.stdout())?.[1] ?? '';
  assert.ok(key && account);
  // Enterprise: the load measures draining, not the free plan's request budget.
  assert.equal(runAds(['accounts', 'set-plan', account, 'enterprise'], env).code, 0);
  return { server, key };
}

describe('SIGTERM under load: ads serve drains without a reset or a 5xx', () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ads-sigterm-'));
  const running: ServeProcess[] = [];
  after(async () => {
    const alive = running.filter((s) => s.child.exitCode === null && s.child.signalCode === null);
    await Promise.all(alive.map((s) => s.stop('SIGKILL')));
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it(`${CYCLES} SIGTERM cycle(s) with ${CLIENTS} keep-alive clients: 0 resets, 0 5xx, 0 writes lost, exit 0`, {
    timeout: 600_000,
  }, async (t) => {
    const tally: Tally = {
      acknowledged: new Map(),
      uncertain: new Set(),
      requests: 0,
      refused: 0,
      failures: [],
    };
    let { server, key } = await firstStart({ ADS_DATA_DIR: dataDir });
    running.push(server);
    const ca = fs.readFileSync(path.join(dataDir, 'tls/cert.pem'));
    const drainMs: number[] = [];
    for (let cycle = 0; cycle < CYCLES; cycle++) {
      if (cycle > 0) {
        server = await startServe({ ADS_DATA_DIR: dataDir });
        running.push(server);
      }
      // One connection per client: a shared pool may open another connection at any moment, and
      // one still in the kernel's accept queue when the listener closes is reset (its request was
      // never sent, but the client cannot tell that reset from one that lost a request).
      const agents = Array.from(
        { length: CLIENTS },
        () => new Agent({ connect: { ca, servername: 'localhost' }, connections: 1 }),
      );
      const stop = { now: false };
      const answered = new Array<number>(CLIENTS).fill(0);
      const clients = Array.from({ length: CLIENTS }, (_, n) =>
        client(server.url, key, agents[n]!, n, tally, stop, () => answered[n]!++),
      );
      // Mid-load: every client has had answers on its keep-alive connection, so no connection is
      // still being opened.
      await waitUntil('the load to be under way', () => answered.every((a) => a >= 3), 120_000);
      const signalled = performance.now();
      server.child.kill('SIGTERM');
      const code = await server.exited;
      drainMs.push(Math.round(performance.now() - signalled));
      assert.equal(code, 0, `exit code after SIGTERM:\n${server.stderr().slice(-2000)}`);
      stop.now = true;
      await Promise.all(clients);
      await Promise.all(agents.map((a) => a.close()));
      assert.deepEqual(
        tally.failures,
        [],
        `cycle ${cycle}: no reset, hang-up or error answer\n${server.stderr().slice(-3000)}`,
      );
    }

    // Every acknowledged write is there after a restart.
    const check = await startServe({ ADS_DATA_DIR: dataDir });
    running.push(check);
    const ids = [...tally.acknowledged.keys()];
    let lost = 0;
    for (let i = 0; i < ids.length; i += 20) {
      await Promise.all(
        ids.slice(i, i + 20).map(async (id) => {
          const res = await check.fetch('GET', `/v1/data/${id}`, { key });
          if (res.status !== 200) lost++;
          else if (!tally.uncertain.has(id) && res.body.data.title !== tally.acknowledged.get(id)) lost++;
        }),
      );
    }
    assert.equal(await check.stop('SIGTERM'), 0);
    assert.equal(lost, 0, 'acknowledged writes lost');
    assert.ok(tally.acknowledged.size >= CYCLES * CLIENTS, `enough writes (${tally.acknowledged.size})`);
    t.diagnostic(
      `${CYCLES} cycle(s): ${tally.requests} requests, ${tally.acknowledged.size} objects written, ` +
        `0 lost, 0 resets, 0 5xx, ${tally.refused} new connections refused after the listener closed; ` +
        `SIGTERM to exit ms: ${drainMs.join(', ')}`,
    );
  });
});

describe('SIGTERM with webhook attempts in flight: none lost, none sent twice', () => {
  const EVENTS = 12;
  let receiver: Awaited<ReturnType<typeof startReceiverWithCa>>;
  const dirs: string[] = [];
  const procs: Array<{ child: ChildProcess; stop(signal?: NodeJS.Signals): Promise<number | null> }> = [];
  after(async () => {
    const alive = procs.filter((p) => p.child.exitCode === null && p.child.signalCode === null);
    await Promise.all(alive.map((p) => p.stop('SIGKILL')));
    await receiver?.close();
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  });

  for (const host of ['serve', 'worker'] as const) {
    it(`ads ${host}: attempts in flight at SIGTERM finish, are recorded, and are not sent again`, {
      timeout: 120_000,
    }, async (t) => {
      receiver ??= await startReceiverWithCa();
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `ads-sigterm-${host}-`));
      dirs.push(dataDir);
      const env = {
        ADS_DATA_DIR: dataDir,
        ADS_WEBHOOK_ALLOW_PRIVATE: 'true',
        ADS_WEBHOOK_CA_FILE: receiver.caFile,
        // For the worker run, serve's refused first attempts wait long enough for serve to stop.
        ADS_WEBHOOK_RETRY_SCHEDULE: host === 'serve' ? '0.2,0.2,0.2,0.2' : '4,4,4,4',
        // The receiver counts an answer when it starts it: an attempt that timed out on the sender's
        // side after that is rightly retried, and would read as sent twice. On a loaded machine
        // (2026-11-25) one took over 5 s, so attempts get ample time here.
        ADS_WEBHOOK_TIMEOUT_MS: '20000',
      };
      const p = `/inflight-${host}`;
      let accepting = host === 'serve';
      const answered = new Map<string, number>(); // delivery id -> 2xx answers sent
      receiver.rx.setHandler((req) => {
        if (req.url !== p) return { status: 404 };
        if (!accepting) return { status: 503 };
        const id = String(req.headers['x-service-delivery']);
        answered.set(id, (answered.get(id) ?? 0) + 1);
        // Slow answers keep attempts in flight when the signal arrives.
        return { status: 200, delayMs: 500 };
      });
      const { server, key } = await firstStart(env);
      procs.push(server);
      const hook = await server.fetch('POST', '/v1/webhooks', {
        key,
        body: { url: `${receiver.rx.url}${p}`, events: ['data.created'] },
      });
      assert.equal(hook.status, 201, JSON.stringify(hook.body));
      for (let i = 0; i < EVENTS; i++) {
        const res = await server.fetch('POST', '/v1/data', {
          key,
          body: { title: `${host} ${i}`, type: 'note' },
        });
        assert.equal(res.status, 201);
      }
      let first: (typeof procs)[number] = server;
      if (host === 'worker') {
        // serve's own attempts are refused; the deliveries wait for a retry by `ads worker`.
        await waitUntil(
          'serve to try every event once',
          () => receiver.rx.requests.filter((r) => r.url === p).length >= EVENTS,
        );
        assert.equal(await server.stop('SIGTERM'), 0);
        accepting = true;
        first = await startWorkerProcess(env);
        procs.push(first);
      }
      const inFlight = await waitUntil(
        'attempts to be in flight',
        () => answered.size >= 1 && answered.size,
        30_000,
      );
      assert.equal(await first.stop('SIGTERM'), 0, 'exit code after SIGTERM');
      const atStop = answered.size;

      // A second process finishes the rest; nothing answered 2xx before is sent again.
      const second = host === 'serve' ? await startServe(env) : await startWorkerProcess(env);
      procs.push(second);
      await waitUntil('every delivery to succeed', () => succeeded(dataDir) === EVENTS, 60_000);
      assert.equal(await second.stop('SIGTERM'), 0);
      const twice = [...answered].filter(([, n]) => n > 1);
      assert.deepEqual(twice, [], 'deliveries answered 2xx more than once');
      assert.equal(answered.size, EVENTS, 'every delivery answered once');
      t.diagnostic(
        `${inFlight} attempt(s) in flight at SIGTERM, ${atStop} received by then; 0 lost, 0 sent twice`,
      );
    });
  }
});

/** Succeeded deliveries, read from the SQLite file (readers do not block the running process). */
function succeeded(dataDir: string): number {
  const db = new BetterSqlite3(path.join(dataDir, 'ads.sqlite'), { readonly: true });
  try {
    return (
      db.prepare("select count(*) as n from webhook_deliveries where status = 'succeeded'").get() as {
        n: number;
      }
    ).n;
  } finally {
    db.close();
  }
}
