import type { Config } from '../config.ts';
import { createSecretBox, loadOrCreateKey, type SecretBox } from './secret-box.ts';

const boxes = new Map<string, SecretBox>();

/** The secret box for this data directory (or ADS_SECRET_KEY), created once per process. */
export function secretBoxFor(config: Pick<Config, 'dataDir' | 'secretKey'>): SecretBox {
  const id = `${config.dataDir}\u0000${config.secretKey ?? ''}`;
  let box = boxes.get(id);
  if (!box) {
    box = createSecretBox(loadOrCreateKey({ dataDir: config.dataDir, keyBase64: config.secretKey }));
    boxes.set(id, box);
  }
  return box;
}
