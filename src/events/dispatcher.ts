import fs from 'node:fs';
import type { Agent } from 'undici';
import type { Config } from '../config.ts';
import { createGuardedDispatcher } from './ssrf.ts';

/** The SSRF-guarded undici Agent for deliveries, with the settings' private-target switch and extra CA. */
export function createDeliveryDispatcher(config: Pick<Config, 'webhook'>): Agent {
  const { allowPrivate, caFile, timeoutMs } = config.webhook;
  const ca = caFile ? fs.readFileSync(caFile, 'utf8') : undefined;
  return createGuardedDispatcher({ allowPrivate, timeoutMs, ...(ca ? { ca } : {}) });
}
