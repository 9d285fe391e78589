import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import BetterSqlite3 from 'better-sqlite3';
import { Agent, request } from 'undici';
import { runAds, type ServeProcess, startServe } from '../helpers/process.ts';

/** Long form (`npm run test:reliability`): 20 cycles; `npm test` runs a short form. */
const LONG = process.env.ADS_RELIABILITY_LONG === '1';
const CYCLES = LONG ? 20 : 2;
const WRITERS = 50;

type Expected = { title: string } | 'deleted';

interface Ledger {
  expected: Map<string, Expected>;
  /** Objects whose last write was in flight at the kill: either outcome is correct. */
  uncertain: Set<string>;
  acknowledged: number;
  /** Answers other than the expected success, e.g. `PATCH 500`: must stay empty. */
  unexpected: string[];
}

async function writer(
  server: ServeProcess,
  key: string,
  agent: Agent,
  n: number,
  ledger: Ledger,
  stop: { now: boolean },
) {
  const mine: string[] = [];
  const call = async (method: string, p: string, body?: unknown) => {
    const res = await request(`${server.url}${p}`, {
      method: method as 'POST',
      dispatcher: agent,
      headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const text = await res.body.text();
    return { status: res.statusCode, body: text ? JSON.parse(text) : null };
  };
  for (let i = 0; !stop.now; i++) {
    const target = mine.length && i % 3 === 2 ? mine[(i * 7) % mine.length] : undefined;
    const del = target && i % 5 === 4;
    try {
      if (target && del) {
        ledger.uncertain.add(target);
        const res = await call('DELETE', `/v1/data/${target}`);
        if (res.status !== 204)
          return void ledger.unexpected.push(`DELETE ${res.status} ${JSON.stringify(res.body)}`);
        ledger.uncertain.delete(target);
        ledger.expected.set(target, 'deleted');
        mine.splice(mine.indexOf(target), 1);
      } else if (target) {
        const title = `w${n} update ${i}`;
        ledger.uncertain.add(target);
        const res = await call('PATCH', `/v1/data/${target}`, { title });
        if (res.status !== 200)
          return void ledger.unexpected.push(`PATCH ${res.status} ${JSON.stringify(res.body)}`);
        ledger.uncertain.delete(target);
        ledger.expected.set(target, { title });
      } else {
        const title = `w${n} create ${i}`;
        const res = await call('POST', '/v1/data', { title, type: 'note', content: 'x'.repeat(512) });
        if (res.status !== 201)
          return void ledger.unexpected.push(`POST ${res.status} ${JSON.stringify(res.body)}`);
        ledger.expected.set(res.body.data.id, { title });
        mine.push(res.body.data.id);
      }
      ledger.acknowledged++;
    } catch {
      return; // the server died under us: this request was never acknowledged
    }
  }
}

describe('crash safety: SIGKILL during concurrent writes loses no acknowledged write', () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ads-crash-'));
  after(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  it(`keeps every acknowledged create, update and delete through ${CYCLES} kill -9 cycles`, {
    timeout: 600_000,
  }, async (t) => {
    const ledger: Ledger = { expected: new Map(), uncertain: new Set(), acknowledged: 0, unexpected: [] };
    let key = '';
    for (let cycle = 0; cycle < CYCLES; cycle++) {
      const server = await startServe({ ADS_DATA_DIR: dataDir });
      if (!key) {
        key = /Admin API key \(shown once, keep it safe\): (ads_\S+)/.exec(server.stdout())?.[1] ?? '';
        const account = /Created account (acc_\S+)/.exec(server.stdout())?.[1] ?? '';
        // Enterprise: the writers measure durability, not the free plan's 60 requests a minute.
        assert.equal(
          runAds(['accounts', 'set-plan', account, 'enterprise'], { ADS_DATA_DIR: dataDir }).code,
          0,
        );
      }
      assert.ok(key);
      const agent = new Agent({
        connect: { ca: fs.readFileSync(path.join(dataDir, 'tls/cert.pem')), servername: 'localhost' },
      });
      const stop = { now: false };
      const writers = Array.from({ length: WRITERS }, (_, n) => writer(server, key, agent, n, ledger, stop));
      // Kill at a random moment once writes are flowing: a fixed delay alone can end a cycle
      // before a slow (loaded) machine has acknowledged anything.
      const ackedBefore = ledger.acknowledged;
      const flowing = Date.now() + 20_000;
      while (ledger.acknowledged < ackedBefore + 10 && Date.now() < flowing) {
        await new Promise((r) => setTimeout(r, 20));
      }
      await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 500)));
      server.child.kill('SIGKILL');
      await server.exited;
      stop.now = true;
      await Promise.all(writers);
      await agent.close();
      verifyOnDisk(dataDir, ledger);
    }
    assert.deepEqual(ledger.unexpected, [], 'no error answers while the server was up');
    assert.ok(ledger.acknowledged >= CYCLES * 10, `enough writes were acknowledged (${ledger.acknowledged})`);
    t.diagnostic(
      `${CYCLES} SIGKILL cycles, ${WRITERS} writers: ${ledger.acknowledged} acknowledged writes, 0 lost`,
    );
  });
});

/** Reads the database file directly (server stopped) and counts acknowledged writes that are missing. */
function verifyOnDisk(dataDir: string, ledger: Ledger) {
  const db = new BetterSqlite3(path.join(dataDir, 'ads.sqlite'));
  try {
    assert.equal(db.pragma('integrity_check', { simple: true }), 'ok');
    const rows = new Map(
      (db.prepare('select id, title from data_objects').all() as { id: string; title: string }[]).map((r) => [
        r.id,
        r.title,
      ]),
    );
    const created = new Set(
      (
        db.prepare("select payload from events where name = 'data.created'").all() as { payload: string }[]
      ).map((e) => JSON.parse(e.payload).data.id as string),
    );
    let lost = 0;
    let eventsMissing = 0;
    for (const [id, want] of ledger.expected) {
      if (!created.has(id)) eventsMissing++;
      if (ledger.uncertain.has(id)) continue;
      if (want === 'deleted' ? rows.has(id) : rows.get(id) !== want.title) lost++;
    }
    assert.equal(lost, 0, 'acknowledged writes lost');
    assert.equal(eventsMissing, 0, 'acknowledged creates without their committed event');
  } finally {
    db.close();
  }
}
