import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdir, open, rename, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { SMTPTransportOptions } from 'nodemailer';
import { createTransport } from 'nodemailer';

/** One outgoing message; `text` and `html` become a multipart/alternative body. */
export interface MailMessage {
  to: string;
  subject: string;
  text: string;
  html: string;
  headers?: Record<string, string>;
}

/** What a successful send reports; `messageId` is the Message-ID header, angle brackets included. */
export interface SendResult {
  messageId: string;
  transport: 'smtp' | 'file';
}

/** Sends mail by SMTP or drops it into the outbox directory. */
export interface Mailer {
  send(msg: MailMessage): Promise<SendResult>;
  close(): Promise<void>;
}

/** The slice of a pino logger the mailer uses. */
export interface MailerLogger {
  info(obj: Record<string, unknown>, msg: string): void;
  warn(obj: Record<string, unknown>, msg: string): void;
}

export interface MailerOptions {
  /** `smtp://[user:pass@]host[:port]` or `smtps://…`; query options are listed at `parseSmtpUrl`. */
  smtpUrl?: string;
  /** Where `.eml` files go when no SMTP URL is set. */
  outboxDir: string;
  from: string;
  logger?: MailerLogger;
  /** Connection, greeting and socket timeout in ms (default 10 000) so a dead server fails fast. */
  timeoutMs?: number;
}

const DEFAULT_TIMEOUT_MS = 10_000;
const MAX_FILE_ID_LENGTH = 120;

/**
 * Turns an SMTP URL into nodemailer options. We parse it ourselves (not nodemailer's `url`
 * option) so credentials are percent-decoded predictably and a typo in a query option fails at
 * start-up instead of being silently ignored. Supported query options:
 * - `tls_ca_file=/path/ca.pem`: extra CA (PEM) trusted for `smtps://` and STARTTLS;
 * - `require_tls=true`: refuse to send over `smtp://` unless STARTTLS succeeds.
 * Plain `smtp://` still upgrades with STARTTLS whenever the server offers it.
 */
export function parseSmtpUrl(smtpUrl: string): SMTPTransportOptions {
  let url: URL;
  try {
    url = new URL(smtpUrl);
  } catch {
    throw new Error('ADS_SMTP_URL is not a valid URL');
  }
  if (url.protocol !== 'smtp:' && url.protocol !== 'smtps:') {
    throw new Error('ADS_SMTP_URL must start with smtp:// or smtps://');
  }
  if (!url.hostname) throw new Error('ADS_SMTP_URL has no host');
  const secure = url.protocol === 'smtps:';
  const options: SMTPTransportOptions = {
    host: url.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: url.port ? Number(url.port) : secure ? 465 : 587,
    secure,
  };
  if (url.username || url.password) {
    options.auth = { user: decodeURIComponent(url.username), pass: decodeURIComponent(url.password) };
  }
  for (const [key, value] of url.searchParams) {
    if (key === 'tls_ca_file') {
      try {
        options.tls = { ...options.tls, ca: readFileSync(value, 'utf8') };
      } catch (err) {
        throw new Error(`ADS_SMTP_URL tls_ca_file cannot be read: ${(err as Error).message}`);
      }
    } else if (key === 'require_tls') {
      if (value !== 'true' && value !== 'false')
        throw new Error('ADS_SMTP_URL require_tls must be true or false');
      options.requireTLS = value === 'true';
    } else {
      throw new Error(`ADS_SMTP_URL has an unknown option "${key}" (known: tls_ca_file, require_tls)`);
    }
  }
  return options;
}

/** Creates the mailer: SMTP when `smtpUrl` is set, otherwise `.eml` files in `outboxDir`. */
export function createMailer(opts: MailerOptions): Mailer {
  const timeout = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  // Message fields are plain strings; refusing file and URL access means no field can ever make
  // nodemailer read a local file or fetch a URL.
  const safety = { disableFileAccess: true, disableUrlAccess: true };
  const defaults = { from: opts.from };
  let closed = false;

  const toMail = (msg: MailMessage) => ({
    to: msg.to,
    subject: msg.subject,
    text: msg.text,
    html: msg.html,
    headers: msg.headers,
  });

  const guard = () => {
    if (closed) throw new Error('mailer is closed');
  };

  if (opts.smtpUrl) {
    const transport = createTransport(
      {
        ...parseSmtpUrl(opts.smtpUrl),
        ...safety,
        connectionTimeout: timeout,
        greetingTimeout: timeout,
        socketTimeout: timeout,
        dnsTimeout: timeout,
      },
      defaults,
    );
    return {
      async send(msg) {
        guard();
        try {
          const info = await transport.sendMail(toMail(msg));
          opts.logger?.info({ messageId: info.messageId, transport: 'smtp' }, 'mail sent');
          return { messageId: info.messageId, transport: 'smtp' };
        } catch (err) {
          const e = err as Error & { code?: string; responseCode?: number };
          opts.logger?.warn(
            { err: e.message, code: e.code, responseCode: e.responseCode, transport: 'smtp' },
            'mail send failed',
          );
          throw err;
        }
      },
      async close() {
        closed = true;
        transport.close();
      },
    };
  }

  const transport = createTransport(
    { ...safety, streamTransport: true, buffer: true, newline: 'windows' },
    defaults,
  );
  return {
    async send(msg) {
      guard();
      const info = await transport.sendMail(toMail(msg));
      const raw = info.message as Buffer;
      const file = await writeAtomically(opts.outboxDir, emlName(info.messageId), raw);
      opts.logger?.info({ messageId: info.messageId, transport: 'file', file }, 'mail written to outbox');
      return { messageId: info.messageId, transport: 'file' };
    },
    async close() {
      closed = true;
    },
  };
}

/** `<timestamp>-<message id>.eml`; the timestamp sorts files by creation time. */
function emlName(messageId: string): string {
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const id = messageId
    .replace(/^<|>$/g, '')
    .replace(/[^A-Za-z0-9._@-]/g, '_')
    .slice(0, MAX_FILE_ID_LENGTH);
  return `${stamp}-${id || randomBytes(8).toString('hex')}.eml`;
}

/**
 * Writes then renames so a reader of the outbox never sees a half-written message. The file holds
 * a live invitation token, hence owner-only permissions.
 */
async function writeAtomically(dir: string, name: string, data: Buffer): Promise<string> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const finalPath = join(dir, name);
  const tmpPath = join(dir, `.${name}.${randomBytes(6).toString('hex')}.tmp`);
  const handle = await open(tmpPath, 'wx', 0o600);
  try {
    try {
      await handle.writeFile(data);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(tmpPath, finalPath);
  } catch (err) {
    await unlink(tmpPath).catch(() => {});
    throw err;
  }
  return finalPath;
}
