import fs from 'node:fs';
import { sql } from 'kysely';
import { type Config, ConfigError } from '../config.ts';
import type { Database } from '../db/database.ts';
import { keyFileOf } from './secret-box.ts';
import { secretBoxFor } from './secrets.ts';

/** Webhook signing secrets read per statement. */
const PAGE = 500;

/**
 * The values the database holds sealed with the secret key, a few at a time: three of the newest
 * queued mails, three stored idempotent answers (they live 24 hours), then every webhook signing
 * secret, in pages (a key lost for good leaves old secrets behind until each webhook is given a
 * new one, so no sample of them can stand for the rest). The caller stops at the first that opens:
 * with the right key, the first.
 */
async function* sealedValues(database: Database): AsyncGenerator<{ what: string; value: string }> {
  const { rows: mail } = await sql<{ v: string }>`select sealed_message as v from mail_outbox
    where sealed_message is not null order by created_at desc limit 3`.execute(database.db);
  for (const row of mail) yield { what: 'queued mail', value: row.v };
  const { rows: answers } = await sql<{ v: string }>`select sealed_response as v from idempotency_keys
    where sealed_response is not null limit 3`.execute(database.db);
  for (const row of answers) yield { what: 'stored idempotent answers', value: row.v };
  let after: { account_id: string; id: string } | undefined;
  for (;;) {
    const from = after ? sql`and (account_id, id) > (${after.account_id}, ${after.id})` : sql``;
    const { rows } = await sql<{ account_id: string; id: string; v: string }>`
      select account_id, id, sealed_secret as v from webhooks where sealed_secret is not null ${from}
      order by account_id, id limit ${PAGE}`.execute(database.db);
    for (const row of rows) yield { what: 'webhook signing secrets', value: row.v };
    if (rows.length < PAGE) return;
    after = rows[rows.length - 1];
  }
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
 * generated. A key at hand is refused only when nothing sealed opens, so one value sealed again
 * after a key was replaced (a webhook given a new secret) lets the check pass.
 */
export async function checkSecretKey(config: Readonly<Config>, database: Database): Promise<void> {
  if (!config.secretKeyCheck) return;
  const lost =
    'if that key is lost for good, set ADS_SECRET_KEY_CHECK=false to start with this one (values sealed with the old key stay unreadable: give webhooks new secrets; see docs/deployment.md)';
  const file = keyFileOf(config.dataDir);
  const missing = config.secretKey === undefined && !fs.existsSync(file);
  const seen = new Set<string>();
  let box: ReturnType<typeof secretBoxFor> | undefined;
  for await (const sealed of sealedValues(database)) {
    seen.add(sealed.what);
    if (missing) {
      throw new ConfigError(
        `${file} is missing, but the database holds ${sealed.what} sealed with a secret key: put back the secret.key of this database's data directory (or set ADS_SECRET_KEY to it, the same on every instance); ${lost}`,
      );
    }
    box ??= secretBoxFor(config);
    try {
      box.open(sealed.value);
      return;
    } catch {
      // Sealed with another key: read on.
    }
  }
  if (seen.size === 0) return;
  const source = config.secretKey === undefined ? file : 'ADS_SECRET_KEY';
  throw new ConfigError(
    `the secret key in ${source} cannot open any of the ${[...seen].join(' or ')} the database holds: they were sealed with another key. Use the key of this database (every instance sharing it needs the same one); ${lost}`,
  );
}
