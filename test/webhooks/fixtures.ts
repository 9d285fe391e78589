import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { createDeliveryWorker, type DeliveryWorker } from '../../src/events/delivery-worker.ts';
import type { Harness, TestAccount } from '../helpers/harness.ts';
import {
  type HttpsReceiver,
  type ReceivedRequest,
  type ReceiverResponse,
  startHttpsReceiver,
} from '../helpers/https-receiver.ts';

/** A running receiver and a file holding its CA, for ADS_WEBHOOK_CA_FILE. */
export interface ReceiverWithCa {
  rx: HttpsReceiver;
  caFile: string;
  close(): Promise<void>;
}

/** Starts an HTTPS receiver and writes its certificate where the settings can point at it. */
export async function startReceiverWithCa(): Promise<ReceiverWithCa> {
  const rx = await startHttpsReceiver();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ads-rx-'));
  const caFile = path.join(dir, 'receiver-ca.pem');
  fs.writeFileSync(caFile, rx.ca);
  return {
    rx,
    caFile,
    close: async () => {
      await rx.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A receiver for the whole test file, closed after it. */
export async function fileReceiver(): Promise<ReceiverWithCa> {
  const receiver = await startReceiverWithCa();
  after(() => receiver.close());
  return receiver;
}

/** An enterprise account and a running delivery worker for the enclosing describe block. */
export function withDeliveryWorker(h: Harness): { acc: TestAccount; worker: DeliveryWorker } {
  const state = {} as { acc: TestAccount; worker: DeliveryWorker };
  before(async () => {
    state.acc = await h.account('enterprise');
    state.worker = createDeliveryWorker(h.ctx);
    await state.worker.ready;
  });
  after(() => state.worker?.stop());
  return state;
}

/** A path unique to one test, so tests sharing a receiver tell their requests apart. */
export const uniquePath = (label: string) => `/${label}/${randomBytes(6).toString('hex')}`;

/** The requests the receiver got on one path. */
export const requestsTo = (rx: HttpsReceiver, p: string): ReceivedRequest[] =>
  rx.requests.filter((r) => r.url === p);

/** Polls `check` until it returns a value other than undefined/false; fails after `timeoutMs`. */
export async function waitUntil<T>(
  what: string,
  check: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(20);
  }
}

/** Registers a webhook through the API and returns its id. */
export async function registerWebhook(
  h: Harness,
  acc: TestAccount,
  body: { url: string; events: string[]; secret?: string },
): Promise<string> {
  const res = await h.request('POST', '/v1/webhooks', { key: acc.adminKey, body });
  if (res.status !== 201) throw new Error(`webhook registration failed: ${res.status} ${res.raw}`);
  return res.body.data.id as string;
}

// biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON bodies.
type Json = any;

/** The delivery log of a webhook (first page of 100). */
export async function deliveriesOf(h: Harness, key: string, webhookId: string): Promise<Json[]> {
  const res = await h.request('GET', `/v1/webhooks/${webhookId}/deliveries?limit=100`, { key });
  if (res.status !== 200) throw new Error(`deliveries list failed: ${res.status} ${res.raw}`);
  return res.body.data.deliveries;
}

/** Per-path answers for a shared receiver: each path gets its own handler, told the attempt number. */
type Answer = (n: number) => ReceiverResponse | Promise<ReceiverResponse>;

export function routeByPath(rx: HttpsReceiver): (p: string, answer: Answer) => void {
  const routes = new Map<string, Answer>();
  rx.setHandler((req) => {
    const answer = routes.get(req.url);
    return answer ? answer(requestsTo(rx, req.url).length) : { status: 200 };
  });
  return (p, answer) => {
    routes.set(p, answer);
  };
}
