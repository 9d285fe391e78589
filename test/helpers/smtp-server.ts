import type { AddressInfo } from 'node:net';
import type { SMTPServerDataStream } from 'smtp-server';
import { SMTPServer } from 'smtp-server';

/** One message as the server received it. */
export interface ReceivedMessage {
  mailFrom: string;
  rcptTo: string[];
  /** Username from AUTH, when the client logged in. */
  user: string | undefined;
  /** The raw RFC 822 message, CRLF line endings. */
  raw: string;
}

export interface TestSmtpServer {
  /** `smtp://127.0.0.1:<port>`, no credentials needed. */
  url: string;
  port: number;
  messages: ReceivedMessage[];
  /** While true, every message is answered `451` after DATA (a temporary failure). */
  setReject(reject: boolean): void;
  /** Resolves once `count` messages arrived; rejects after `timeoutMs`. */
  waitFor(count: number, timeoutMs?: number): Promise<ReceivedMessage[]>;
  close(): Promise<void>;
}

const MAX_MESSAGE_BYTES = 5 * 1024 * 1024;

/** Starts a real SMTP server on 127.0.0.1 at a free port, collecting what it receives. */
export async function startSmtpServer(opts: { reject?: boolean } = {}): Promise<TestSmtpServer> {
  let reject = opts.reject ?? false;
  const messages: ReceivedMessage[] = [];

  const server = new SMTPServer({
    secure: false,
    disabledCommands: ['STARTTLS'],
    authOptional: true,
    allowInsecureAuth: true,
    logger: false,
    size: MAX_MESSAGE_BYTES,
    closeTimeout: 1_000,
    onAuth(auth, _session, callback) {
      callback(null, { user: auth.username });
    },
    onData(stream: SMTPServerDataStream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        if (reject) {
          const err = Object.assign(new Error('Try again later'), { responseCode: 451 });
          callback(err);
          return;
        }
        const from = session.envelope.mailFrom;
        messages.push({
          mailFrom: from ? from.address : '',
          rcptTo: session.envelope.rcptTo.map((r) => r.address),
          user: typeof session.user === 'string' ? session.user : undefined,
          raw: Buffer.concat(chunks).toString('utf8'),
        });
        callback();
      });
    },
  });

  await new Promise<void>((resolve, reject) => {
    server.server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.server.address() as AddressInfo).port;

  return {
    url: `smtp://127.0.0.1:${port}`,
    port,
    messages,
    setReject(value) {
      reject = value;
    },
    async waitFor(count, timeoutMs = 5_000) {
      const deadline = Date.now() + timeoutMs;
      while (messages.length < count) {
        if (Date.now() > deadline) {
          throw new Error(`expected ${count} message(s) within ${timeoutMs} ms, got ${messages.length}`);
        }
        await new Promise((r) => setTimeout(r, 10));
      }
      return messages;
    },
    close() {
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A decoded MIME leaf part. */
export interface MimePart {
  contentType: string;
  body: string;
}

/** A parsed message: lower-cased, unfolded headers and its decoded leaf parts. */
export interface ParsedMessage {
  headers: Map<string, string>;
  parts: MimePart[];
}

/**
 * Just enough MIME parsing to check what a mail client would show: splits headers from body,
 * walks multipart bodies and decodes quoted-printable and base64 leaves. Not a general parser.
 */
export function parseMessage(raw: string, depth = 0): ParsedMessage {
  const normalised = raw.replace(/\r\n/g, '\n');
  const split = normalised.indexOf('\n\n');
  const head = split === -1 ? normalised : normalised.slice(0, split);
  const body = split === -1 ? '' : normalised.slice(split + 2);

  const headers = new Map<string, string>();
  for (const line of head.replace(/\n[ \t]+/g, ' ').split('\n')) {
    const colon = line.indexOf(':');
    if (colon > 0) headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
  }

  const contentType = headers.get('content-type') ?? 'text/plain';
  const boundary = /boundary="?([^";]+)"?/i.exec(contentType)?.[1];
  if (contentType.toLowerCase().startsWith('multipart/') && boundary && depth < 5) {
    const parts: MimePart[] = [];
    const sections = body.split(`--${boundary}`);
    // First section is the preamble; the one after the closing delimiter starts with `--`.
    for (const section of sections.slice(1)) {
      if (section.startsWith('--')) break;
      parts.push(...parseMessage(section.replace(/^\n/, ''), depth + 1).parts);
    }
    return { headers, parts };
  }

  const encoding = (headers.get('content-transfer-encoding') ?? '7bit').toLowerCase();
  return { headers, parts: [{ contentType: contentType.toLowerCase(), body: decodeBody(body, encoding) }] };
}

/** The decoded body of the first part whose content type starts with `type`, e.g. `text/plain`. */
export function partOf(raw: string, type: string): string {
  const part = parseMessage(raw).parts.find((p) => p.contentType.startsWith(type));
  if (!part) throw new Error(`no ${type} part in message`);
  return part.body;
}

function decodeBody(body: string, encoding: string): string {
  if (encoding === 'base64') return Buffer.from(body.replace(/\s+/g, ''), 'base64').toString('utf8');
  if (encoding === 'quoted-printable') {
    const bytes = body
      .replace(/=\n/g, '')
      .replace(/=([0-9A-Fa-f]{2})/g, (_m, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));
    return Buffer.from(bytes, 'latin1').toString('utf8');
  }
  return body;
}
