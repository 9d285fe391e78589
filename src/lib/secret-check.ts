import fs from 'node:fs';
import { sql } from 'kysely';
import { type Config, ConfigError } from '../config.ts';
import type { Database } from '../db/database.ts';
import { keyFileOf } from './secret-box.ts';
import { secretBoxFor } from './secrets.ts';

/**
 * Values the database holds sealed with the secret key: webhook signing secrets (the most recently
 * changed first, so a webhook given a new secret after a key was replaced is among them), queued
 * mail (newest first) and stored idempotent answers (any: they live 24 hours).
 */
const SEALED = [
  { what: 'webhook signing secrets', table: 'webhooks', column: 'sealed_secret', newest: 'updated_at' },
  { what: 'queued mail', table: 'mail_outbox', column: 'sealed_message', newest: 'created_at' },
  { what: 'stored idempotent answers', table: 'idempotency_keys', column: 'sealed_response', newest: null },
] as const;

/** Sealed values read of each kind. */
const SAMPLES = 3;

/** Up to SAMPLES sealed values of each kind the database holds. */
async function sealedSamples(database: Database): Promise<{ what: string; value: string }[]> {
  const samples: { what: string; value: string }[] = [];
  for (const { what, table, column, newest } of SEALED) {
    const order = newest ? sql`order by ${sql.ref(newest)} desc` : sql``;
    const { rows } = await sql<{ v: string }>`select ${sql.ref(column)} as v from ${sql.table(table)}
      where ${sql.ref(column)} is not null ${order} limit ${SAMPLES}`.execute(database.db);
    for (const row of rows) samples.push({ what, value: row.v });
  }
  return samples;
}

/**
 * Start-up check of `ads serve` and `ads worker` (after migrations): the secret key this process
 * would use can open what the database holds sealed. Without it a restore that left out
 * `secret.key`, or one more instance started on a shared PostgreSQL database with another data
 * directory and no ADS_SECRET_KEY, came up with a fresh key: every delivery of the existing
 * webhooks failed ("cannot sign"), queued mail too, and the secrets that process sealed were
 * unreadable to the others. Refused with one line saying what to restore; a key lost for good is
 * accepted with ADS_SECRET_KEY_CHECK=false (docs/deployment.md).
 *
 * A missing `secret.key` is refused as soon as any sealed value exists, before a new one is
 * generated. A key at hand is refused only when no sample opens, so a value sealed again after a
 * key was replaced (the webhook changed last, given a new secret) lets the check pass.
 */
export async function checkSecretKey(config: Readonly<Config>, database: Database): Promise<void> {
  if (!config.secretKeyCheck) return;
  const samples = await sealedSamples(database);
  if (samples.length === 0) return;
  const held = [...new Set(samples.map((s) => s.what))].join(' and ');
  const lost =
    'if that key is lost for good, set ADS_SECRET_KEY_CHECK=false to start with this one (values sealed with the old key stay unreadable: give webhooks new secrets; see docs/deployment.md)';
  const file = keyFileOf(config.dataDir);
  if (config.secretKey === undefined && !fs.existsSync(file)) {
    throw new ConfigError(
      `${file} is missing, but the database holds ${held} sealed with a secret key: put back the secret.key of this database's data directory (or set ADS_SECRET_KEY to it, the same on every instance); ${lost}`,
    );
  }
  const box = secretBoxFor(config);
  const opens = (value: string) => {
    try {
      box.open(value);
      return true;
    } catch {
      return false;
    }
  };
  if (samples.some((s) => opens(s.value))) return;
  const source = config.secretKey === undefined ? file : 'ADS_SECRET_KEY';
  throw new ConfigError(
    `the secret key in ${source} cannot open the ${held} the database holds: they were sealed with another key. Use the key of this database (every instance sharing it needs the same one); ${lost}`,
  );
}
