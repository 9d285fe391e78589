import path from 'node:path';
import type { AppContext } from '../context.ts';
import { secretBoxFor } from '../lib/secrets.ts';
import type { Worker } from '../workers.ts';
import { createMailer, type Mailer } from './mailer.ts';
import {
  claimDueMail,
  markMailFailed,
  markMailSent,
  type OutgoingMail,
  releaseMailLease,
  renewMailLease,
} from './outbox.ts';

export interface MailSenderOptions {
  pollMs?: number;
  /** Delay after the first failure; doubles each attempt up to `maxBackoffMs`. */
  backoffMs?: number;
  maxBackoffMs?: number;
  maxAttempts?: number;
  batch?: number;
  mailer?: Mailer;
}

/** How long a claimed message is this worker's to send (several SMTP timeouts). */
const LEASE_MS = 120_000;

/** The durable mail sender: polls the outbox, sends, and retries with backoff until delivered. */
export function createMailSender(
  ctx: AppContext,
  opts: MailSenderOptions = {},
): Worker & { tick(): Promise<number> } {
  const pollMs = opts.pollMs ?? 1000;
  const backoffMs = opts.backoffMs ?? 10_000;
  const maxBackoffMs = opts.maxBackoffMs ?? 3_600_000;
  const maxAttempts = opts.maxAttempts ?? 25;
  const batch = opts.batch ?? 10;
  const { config, database, clock } = ctx;
  const log = ctx.logger.child({ component: 'mail' });
  const mailer =
    opts.mailer ??
    createMailer({
      smtpUrl: config.smtpUrl,
      outboxDir: path.join(config.dataDir, 'outbox'),
      from: config.mailFrom,
      logger: log,
    });
  const box = secretBoxFor(config);
  let stopped = false;
  let running: Promise<number> | null = null;
  let timer: NodeJS.Timeout | null = null;

  const tick = async (): Promise<number> => {
    const now = clock();
    const rows = await claimDueMail(
      database.db,
      database.dialect,
      new Date(now).toISOString(),
      new Date(now + LEASE_MS).toISOString(),
      batch,
    );
    for (const [i, row] of rows.entries()) {
      if (stopped) {
        // Stopping: the message being sent has finished; the rest of the batch goes back now, for
        // the next worker to send at once (not after the lease), and stop() does not wait for
        // slow sends of messages it has not begun.
        for (const rest of rows.slice(i)) await releaseMailLease(database.db, rest);
        break;
      }
      // Each message gets a fresh lease just before it is sent: a batch of slow sends must not
      // outlive the lease its later messages were claimed with, or another worker would take
      // one of them and both would send it. A message no longer ours is skipped.
      const lease = new Date(clock() + LEASE_MS).toISOString();
      if (!(await renewMailLease(database.db, row, lease))) continue;
      try {
        if (!row.sealed_message) throw new Error('message body missing');
        const mail = JSON.parse(box.open(row.sealed_message)) as OutgoingMail;
        await mailer.send({ ...mail, headers: { 'X-ADS-Message-Id': row.id } });
        await markMailSent(database.db, row, new Date(clock()).toISOString());
      } catch (err) {
        const attempts = row.attempts + 1;
        const delay = Math.min(maxBackoffMs, backoffMs * 2 ** (attempts - 1));
        const next = attempts >= maxAttempts ? null : new Date(clock() + delay).toISOString();
        log.warn(
          { mail_id: row.id, attempts, err: (err as Error).message, retry_at: next },
          'mail send failed',
        );
        await markMailFailed(database.db, row, (err as Error).message, next);
      }
    }
    return rows.length;
  };

  const loop = () => {
    if (stopped) return;
    running = tick().catch((err: unknown) => {
      log.error({ err }, 'mail sender tick failed');
      return 0;
    });
    running.finally(() => {
      running = null;
      if (!stopped) timer = setTimeout(loop, pollMs);
    });
  };
  timer = setTimeout(loop, 0);

  return {
    name: 'mail',
    tick,
    stop: async () => {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running;
      await mailer.close();
    },
  };
}
