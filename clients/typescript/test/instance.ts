import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Agent } from 'undici';
import { runAds, type ServeProcess, startServe } from '../../../test/helpers/process.ts';
import type { FetchLike } from '../src/retry.ts';

/** A real `ads serve` on a fresh data directory, and a fetch that trusts its certificate. */
export interface Instance {
  url: string;
  serve: ServeProcess;
  /** Global fetch with an undici dispatcher trusting the instance's self-signed certificate. */
  fetch: FetchLike;
  /** A new account on `plan` through the `ads` command, with its admin key. */
  account(plan: 'free' | 'pro' | 'enterprise'): { id: string; key: string };
  close(): Promise<void>;
}

/** Starts `ads serve` with `env` added to a fresh ADS_DATA_DIR. */
export async function startInstance(env: Record<string, string> = {}): Promise<Instance> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ads-client-'));
  const fullEnv = { ADS_DATA_DIR: dataDir, ...env };
  const serve = await startServe(fullEnv);
  const ca = fs.readFileSync(path.join(dataDir, 'tls/cert.pem'));
  const dispatcher = new Agent({ connect: { ca, servername: 'localhost' } });
  return {
    url: serve.url,
    serve,
    fetch: (request, init) => fetch(request, { ...init, dispatcher } as unknown as RequestInit),
    account: (plan) => {
      const email = `client-${Date.now()}-${Math.random().toString(36).slice(2, 8)}@example.com`;
      const args = ['accounts', 'create', '--name', 'Client tests', '--admin-email', email];
      const res = runAds([...args, '--plan', plan, '--json'], fullEnv);
      if (res.code !== 0) throw new Error(`ads accounts create failed: ${res.stderr}`);
      const created = JSON.parse(res.stdout) as { account: { id: string }; api_key: { key: string } };
      return { id: created.account.id, key: created.api_key.key };
    },
    close: async () => {
      await serve.stop();
      await dispatcher.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
