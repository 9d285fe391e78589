import { createPrivateKey, X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { type Static, Type } from 'typebox';
import { Value } from 'typebox/value';
import { KEY_FORMAT, parseKey } from './lib/secret-box.ts';
import { parseSmtpUrl } from './mail/mailer.ts';

const Bool = Type.Enum(['true', 'false', '1', '0']);
const Port = Type.String({ pattern: '^[0-9]{1,5}$', why: 'must be a port number, 0 to 65535' });
const Positive = Type.String({ pattern: '^[1-9][0-9]{0,9}$', why: 'must be a whole number above 0' });

/** Every setting the service reads, as environment variables (decisions §9). */
export const EnvSchema = Type.Object({
  ADS_DATA_DIR: Type.Optional(Type.String({ minLength: 1 })),
  // postgres:// selects PostgreSQL; sqlite:, file: or a plain path (no URL scheme) selects SQLite.
  ADS_DATABASE_URL: Type.Optional(
    Type.String({
      pattern: '^(postgres(ql)?://|sqlite:|file:|(?![A-Za-z][A-Za-z0-9+.-]*:))',
      why: 'must be a postgres:// URL, or a SQLite file as sqlite:, file: or a plain path',
    }),
  ),
  ADS_REDIS_URL: Type.Optional(
    Type.String({ pattern: '^rediss?://', why: 'must be a redis:// or rediss:// URL' }),
  ),
  ADS_HOST: Type.Optional(Type.String({ minLength: 1 })),
  ADS_PORT: Type.Optional(Port),
  ADS_TLS_CERT: Type.Optional(Type.String({ minLength: 1 })),
  ADS_TLS_KEY: Type.Optional(Type.String({ minLength: 1 })),
  ADS_TRUST_PROXY: Type.Optional(Bool),
  ADS_PUBLIC_URL: Type.Optional(
    Type.String({ pattern: '^https?://', why: 'must be an https:// or http:// URL' }),
  ),
  ADS_SMTP_URL: Type.Optional(
    Type.String({ pattern: '^smtps?://', why: 'must be an smtp:// or smtps:// URL' }),
  ),
  ADS_MAIL_FROM: Type.Optional(Type.String({ minLength: 3 })),
  ADS_SECRET_KEY: Type.Optional(
    Type.String({
      pattern: '^[A-Za-z0-9+/=_-]{40,}$',
      why: `must be ${KEY_FORMAT} (openssl rand -base64 32)`,
    }),
  ),
  ADS_SECRET_KEY_CHECK: Type.Optional(Bool),
  ADS_WEBHOOK_ALLOW_PRIVATE: Type.Optional(Bool),
  ADS_WEBHOOK_CA_FILE: Type.Optional(Type.String({ minLength: 1 })),
  ADS_WEBHOOK_TIMEOUT_MS: Type.Optional(Positive),
  ADS_WEBHOOK_RETRY_SCHEDULE: Type.Optional(
    Type.String({
      pattern: '^[0-9]+(\\.[0-9]+)?(,[0-9]+(\\.[0-9]+)?)*$',
      why: 'must be seconds separated by commas, such as 60,300,1800',
    }),
  ),
  ADS_BODY_LIMIT: Type.Optional(Positive),
  ADS_SQLITE_CACHE_MB: Type.Optional(Positive),
  ADS_HEAP_GROWTH_PERCENT: Type.Optional(
    Type.String({ pattern: '^[0-9]{1,4}$', why: 'must be a whole number, 0 to 9999' }),
  ),
  ADS_LOG_LEVEL: Type.Optional(Type.Enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])),
  ADS_AUTH_FAILURES_PER_MINUTE: Type.Optional(Positive),
  ADS_CORS_ORIGINS: Type.Optional(Type.String()),
});

export type Env = Static<typeof EnvSchema>;

/** A webhook attempt's deadline can be long, but a timer (and a drain waiting on it) must be sane. */
const MAX_WEBHOOK_TIMEOUT_MS = 600_000;

/** Settings that hold a URL, which may carry a password (redact masks it). */
const URL_SETTINGS = new Set(['ADS_DATABASE_URL', 'ADS_REDIS_URL', 'ADS_SMTP_URL', 'ADS_PUBLIC_URL']);

/** Settings whose values are secret: an error line names them but never shows the value. */
const SECRET_SETTINGS = new Set(['ADS_SECRET_KEY']);

/**
 * A setting's value as an error line may show it: secrets hidden, URL passwords masked. Up to the
 * last `@`, as a malformed URL is what the line is about: a password with an unescaped `/` or `@`
 * in it (`redis://u:pa/ss@host`) is still masked, and so is the user name around such a character,
 * whether the scheme is well formed or not (`smtp:/u:pw@h`, `redis//:pw@h`, `u:pw@h`). Password
 * query parameters (`?password=`, which pg and ioredis read) are masked, and PEM text given where
 * a file's path belongs (ADS_TLS_KEY="$(cat key.pem)") is not shown at all.
 */
export function redact(name: string, value: string): string {
  if (SECRET_SETTINGS.has(name)) return '(hidden)';
  if (/-----BEGIN|[\r\n]/.test(value)) return '(hidden: PEM text or several lines, not a path or URL)';
  // Only settings that hold a URL have a password to mask: `Acme: Support <support@acme.example`
  // (ADS_MAIL_FROM) is shown whole, as the operator needs to see what is wrong with it.
  if (!URL_SETTINGS.has(name)) return value;
  let shown = value;
  const at = shown.lastIndexOf('@');
  if (at !== -1) {
    const scheme = /^[a-z][a-z0-9+.-]*:\/+/i.exec(shown)?.[0] ?? '';
    const info = shown.slice(scheme.length, at);
    const colon = info.indexOf(':');
    if (colon !== -1) {
      const user = info.slice(0, colon);
      shown = `${scheme}${/[/@]/.test(user) ? '***' : user}:***${shown.slice(at)}`;
    }
  }
  return shown.replace(/([?&;](?:password|passwd|pass|pwd|secret|token)=)[^&;#]*/gi, '$1***');
}

/** The one line a bad setting stops start-up with: its name, its value (redacted), and why. */
const invalidSetting = (name: string, value: string, why: string) =>
  new ConfigError(`Invalid setting ${name}=${JSON.stringify(redact(name, value))}: ${why}.`);

const isHttpUrl = (value: string) => {
  try {
    const url = new URL(value);
    return (url.protocol === 'https:' || url.protocol === 'http:') && url.hostname !== '';
  } catch {
    return false;
  }
};

/** `cacheMb`: SQLite's page cache for the connection (ADS_SQLITE_CACHE_MB; default SQLITE_CACHE_MB). */
export type DatabaseConfig =
  | { dialect: 'sqlite'; file: string; cacheMb?: number }
  | { dialect: 'postgres'; url: string };

/**
 * ADS_PUBLIC_URL when it is not set: where the server listens. With ADS_PORT=0 the server puts the
 * port it was given in its place once it listens (src/server.ts), so links never name port 0.
 */
export const defaultPublicUrl = (host: string, port: number): string => originOf('https', host, port);

/** `scheme://host:port`, an IPv6 host in brackets. */
export const originOf = (scheme: 'http' | 'https', host: string, port: number): string =>
  `${scheme}://${host.includes(':') ? `[${host}]` : host}:${port}`;

/** SQLite page cache in MiB when ADS_SQLITE_CACHE_MB is not set (SQLite's own default is 2). */
export const SQLITE_CACHE_MB = 64;

/**
 * ADS_HEAP_GROWTH_PERCENT when it is not set: how far the JavaScript heap of `ads serve`, `worker`,
 * `migrate` and `reindex` grows past what survived a full collection before the next one
 * (src/lib/heap-growth.ts; V8's own choice is up to 300). The setting takes 10 to 300, or 0 for
 * V8's own choice.
 */
export const HEAP_GROWTH_PERCENT = 50;

export interface Config {
  dataDir: string;
  database: DatabaseConfig;
  redisUrl?: string;
  host: string;
  port: number;
  tls?: { certFile: string; keyFile: string };
  trustProxy: boolean;
  /** Base of links in emails and the OpenAPI `servers` entry (ADS_PUBLIC_URL, else see defaultPublicUrl). */
  publicUrl: string;
  /** True when ADS_PUBLIC_URL was set; otherwise `publicUrl` follows the port actually bound. */
  publicUrlGiven: boolean;
  smtpUrl?: string;
  mailFrom: string;
  secretKey?: string;
  /** ADS_SECRET_KEY_CHECK: start-up refuses a key that cannot open the database's sealed values (src/lib/secret-check.ts). */
  secretKeyCheck: boolean;
  webhook: { allowPrivate: boolean; caFile?: string; timeoutMs: number; retrySchedule: number[] };
  bodyLimit: number;
  logLevel: string;
  authFailuresPerMinute: number;
  /** Set by `ads serve`, `worker`, `migrate` and `reindex` as they start (src/lib/heap-growth.ts); 0: V8's own choice. */
  heapGrowthPercent: number;
  /** ADS_CORS_ORIGINS: browser origins allowed to call the API (src/http/cors.ts); empty: none. */
  corsOrigins: readonly string[] | '*';
}

/** A setting that stops start-up; its message is the one line an operator sees. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

const DEFAULT_RETRY_SCHEDULE = [60, 300, 1800, 7200, 28800];
/** Longest wait one retry step may ask for (the default's longest is 8 h). */
const MAX_RETRY_STEP_SECONDS = 30 * 24 * 3600;
/** Largest SQLite page cache a setting may ask for: its size in KiB must fit a 32-bit number. */
const MAX_SQLITE_CACHE_MB = 1024 * 1024;
/** A mail sender: `addr@host`, or `Name <addr@host>` (a name alone would send mail from no one). */
const MAIL_FROM = /^(?:[^<>]*<\s*[^\s<>@]+@[^\s<>@]+\s*>|[^\s<>@"]+@[^\s<>@]+)$/;

/** Reads the ADS_* variables into a frozen Config; throws ConfigError naming the first bad variable. */
export function loadConfig(env: Record<string, string | undefined>, cwd = process.cwd()): Readonly<Config> {
  const raw: Record<string, string> = {};
  for (const key of Object.keys(EnvSchema.properties)) {
    const value = env[key];
    if (value !== undefined && value !== '') raw[key] = value;
  }
  const first = Value.Errors(EnvSchema, raw)[0];
  if (first) {
    const name = first.instancePath.replace(/^\//, '') || 'ADS_*';
    const allowed = (first.params as { allowedValues?: unknown[] }).allowedValues;
    // What the setting must be, in words (`why` beside each pattern), not the pattern itself.
    const said = (EnvSchema.properties as Record<string, { why?: string }>)[name]?.why;
    const why = allowed ? `must be one of ${allowed.join(', ')}` : (said ?? first.message);
    throw invalidSetting(name, raw[name] ?? '', why);
  }
  const e = raw as Env;
  const bool = (v: string | undefined) => v === 'true' || v === '1';
  const dataDir = path.resolve(cwd, e.ADS_DATA_DIR ?? './var');
  const port = Number(e.ADS_PORT ?? 8443);
  if (port > 65535) throw invalidSetting('ADS_PORT', e.ADS_PORT ?? '', 'above 65535');
  const heapGrowthPercent = Number(e.ADS_HEAP_GROWTH_PERCENT ?? HEAP_GROWTH_PERCENT);
  if (heapGrowthPercent !== 0 && (heapGrowthPercent < 10 || heapGrowthPercent > 300)) {
    // Below 10 a full collection would follow every few MB; above 300 is more than V8 itself allows.
    throw invalidSetting(
      'ADS_HEAP_GROWTH_PERCENT',
      e.ADS_HEAP_GROWTH_PERCENT ?? '',
      'must be 0 or from 10 to 300',
    );
  }
  if (Boolean(e.ADS_TLS_CERT) !== Boolean(e.ADS_TLS_KEY)) {
    throw new ConfigError('Invalid setting ADS_TLS_CERT/ADS_TLS_KEY: set both or neither.');
  }
  const host = e.ADS_HOST ?? '127.0.0.1';
  const retrySchedule = e.ADS_WEBHOOK_RETRY_SCHEDULE?.split(',').map(Number) ?? DEFAULT_RETRY_SCHEDULE;
  if (retrySchedule.some((seconds) => seconds > MAX_RETRY_STEP_SECONDS)) {
    // A step no date can hold failed every attempt's outcome, so the delivery was retried forever.
    throw invalidSetting(
      'ADS_WEBHOOK_RETRY_SCHEDULE',
      e.ADS_WEBHOOK_RETRY_SCHEDULE ?? '',
      `each step at most ${MAX_RETRY_STEP_SECONDS} seconds (30 days)`,
    );
  }
  if (Number(e.ADS_SQLITE_CACHE_MB ?? 0) > MAX_SQLITE_CACHE_MB) {
    // SQLite takes the size in KiB as a 32-bit number: more wrapped around to no cache at all.
    throw invalidSetting(
      'ADS_SQLITE_CACHE_MB',
      e.ADS_SQLITE_CACHE_MB ?? '',
      `at most ${MAX_SQLITE_CACHE_MB} (1 TiB)`,
    );
  }
  if (e.ADS_MAIL_FROM !== undefined && !MAIL_FROM.test(e.ADS_MAIL_FROM.trim())) {
    throw invalidSetting(
      'ADS_MAIL_FROM',
      e.ADS_MAIL_FROM,
      'must be an address (ops@example.com) or a name and an address (Ops <ops@example.com>)',
    );
  }
  if (Number(e.ADS_WEBHOOK_TIMEOUT_MS ?? 0) > MAX_WEBHOOK_TIMEOUT_MS) {
    throw invalidSetting(
      'ADS_WEBHOOK_TIMEOUT_MS',
      e.ADS_WEBHOOK_TIMEOUT_MS ?? '',
      `at most ${MAX_WEBHOOK_TIMEOUT_MS} (10 minutes)`,
    );
  }
  if (e.ADS_REDIS_URL !== undefined && !URL.canParse(e.ADS_REDIS_URL)) {
    throw invalidSetting('ADS_REDIS_URL', e.ADS_REDIS_URL, 'is not a valid URL (redis://host:port)');
  }
  if (e.ADS_SECRET_KEY !== undefined && !parseKey(e.ADS_SECRET_KEY)) {
    throw invalidSetting(
      'ADS_SECRET_KEY',
      e.ADS_SECRET_KEY,
      `must be ${KEY_FORMAT} (openssl rand -base64 32)`,
    );
  }
  if (e.ADS_PUBLIC_URL !== undefined && !isHttpUrl(e.ADS_PUBLIC_URL)) {
    throw invalidSetting('ADS_PUBLIC_URL', e.ADS_PUBLIC_URL, 'must be an http(s) URL with a host');
  }
  const corsOrigins = parseCorsOrigins(e.ADS_CORS_ORIGINS ?? '');
  const config: Config = {
    dataDir,
    database: parseDatabaseUrl(
      e.ADS_DATABASE_URL,
      dataDir,
      cwd,
      Number(e.ADS_SQLITE_CACHE_MB ?? SQLITE_CACHE_MB),
    ),
    redisUrl: e.ADS_REDIS_URL,
    host,
    port,
    tls: e.ADS_TLS_CERT
      ? { certFile: path.resolve(cwd, e.ADS_TLS_CERT), keyFile: path.resolve(cwd, e.ADS_TLS_KEY ?? '') }
      : undefined,
    trustProxy: bool(e.ADS_TRUST_PROXY),
    publicUrl: (e.ADS_PUBLIC_URL ?? defaultPublicUrl(host, port)).replace(/\/+$/, ''),
    publicUrlGiven: e.ADS_PUBLIC_URL !== undefined,
    smtpUrl: e.ADS_SMTP_URL,
    mailFrom: e.ADS_MAIL_FROM ?? 'Account Data Service <no-reply@localhost>',
    secretKey: e.ADS_SECRET_KEY,
    secretKeyCheck: e.ADS_SECRET_KEY_CHECK === undefined ? true : bool(e.ADS_SECRET_KEY_CHECK),
    webhook: {
      allowPrivate: bool(e.ADS_WEBHOOK_ALLOW_PRIVATE),
      caFile: e.ADS_WEBHOOK_CA_FILE ? path.resolve(cwd, e.ADS_WEBHOOK_CA_FILE) : undefined,
      timeoutMs: Number(e.ADS_WEBHOOK_TIMEOUT_MS ?? 10_000),
      retrySchedule,
    },
    bodyLimit: Number(e.ADS_BODY_LIMIT ?? 10 * 1024 * 1024),
    logLevel: e.ADS_LOG_LEVEL ?? 'info',
    authFailuresPerMinute: Number(e.ADS_AUTH_FAILURES_PER_MINUTE ?? 20),
    heapGrowthPercent,
    corsOrigins,
  };
  return Object.freeze(config);
}

/**
 * ADS_CORS_ORIGINS: `*`, or origins separated by commas, each exactly as a browser sends it in
 * `Origin` (`https://app.example.com`, a port when not the scheme's own; no path, no trailing slash).
 */
function parseCorsOrigins(value: string): readonly string[] | '*' {
  const text = value.trim();
  if (text === '*') return '*';
  const origins = text
    .split(',')
    .map((o) => o.trim())
    .filter((o) => o !== '');
  for (const origin of origins) {
    let exact = false;
    try {
      const url = new URL(origin);
      exact = (url.protocol === 'https:' || url.protocol === 'http:') && url.origin === origin;
    } catch {
      exact = false;
    }
    if (!exact) {
      throw invalidSetting(
        'ADS_CORS_ORIGINS',
        value,
        `${JSON.stringify(origin.slice(0, 100))} is not an origin: give * or origins such as https://app.example.com (scheme, host and any port; no path or trailing slash), separated by commas`,
      );
    }
  }
  return Object.freeze(origins);
}

/**
 * Checks, before anything starts, what the settings name on disk: ADS_DATA_DIR is a directory (or
 * does not exist yet), the files (the TLS pair when this process serves HTTPS, the webhook CA) can
 * be read, the TLS pair is a certificate and its key, and ADS_SMTP_URL's options are known. Throws
 * ConfigError naming the setting, where the first use would fail later (after listening) with a
 * bare `ENOENT` or an openssl error and no variable named.
 */
export function checkSettingPaths(config: Readonly<Config>, opts: { tls: boolean }): void {
  const stat = (file: string) => {
    try {
      return fs.statSync(file);
    } catch (err) {
      return (err as NodeJS.ErrnoException).code ?? 'unreadable';
    }
  };
  const dir = stat(config.dataDir);
  if (typeof dir === 'string' ? dir !== 'ENOENT' : !dir.isDirectory()) {
    const why = typeof dir === 'string' ? `cannot use it (${dir})` : 'not a directory';
    throw invalidSetting('ADS_DATA_DIR', config.dataDir, why);
  }
  // What an `ads backup` into an existing directory leaves when killed before it finished
  // (src/cli/backup.ts): restored, that directory would start an empty service, or a database
  // without its secret key, as if it were whole.
  const unfinished = typeof dir === 'string' ? undefined : unfinishedBackup(config.dataDir);
  if (unfinished) {
    throw invalidSetting(
      'ADS_DATA_DIR',
      config.dataDir,
      `holds ${unfinished}, left by an ads backup that did not finish, so it is not a whole backup; take the backup again (or remove ${unfinished} if the rest is known to be whole)`,
    );
  }
  const files: [string, string | undefined][] = [
    ['ADS_TLS_CERT', opts.tls ? config.tls?.certFile : undefined],
    ['ADS_TLS_KEY', opts.tls ? config.tls?.keyFile : undefined],
    ['ADS_WEBHOOK_CA_FILE', config.webhook.caFile],
  ];
  for (const [name, file] of files) {
    if (file === undefined) continue;
    const found = stat(file);
    let why = typeof found === 'string' ? `cannot read the file (${found})` : null;
    if (typeof found !== 'string') {
      if (!found.isFile()) why = 'not a file';
      else {
        try {
          fs.accessSync(file, fs.constants.R_OK);
        } catch (err) {
          why = `cannot read the file (${(err as NodeJS.ErrnoException).code})`;
        }
      }
    }
    if (why) throw invalidSetting(name, file, why);
  }
  if (opts.tls && config.tls) checkTlsPair(config.tls);
  if (config.webhook.caFile) checkCaFile(config.webhook.caFile);
  if (config.smtpUrl) {
    try {
      parseSmtpUrl(config.smtpUrl);
    } catch (err) {
      const why = (err as Error).message.replace(/^ADS_SMTP_URL /, '');
      throw invalidSetting('ADS_SMTP_URL', config.smtpUrl, why);
    }
  }
}

/**
 * The webhook CA file holds PEM certificates, each one whole: Node builds the trust store from
 * what parses and drops the rest without a word, so a wrong file only showed as every delivery to
 * the test receiver failing its certificate check.
 */
function checkCaFile(file: string): void {
  const text = fs.readFileSync(file, 'latin1');
  const blocks = text.match(/-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g) ?? [];
  const begun = text.match(/-----BEGIN CERTIFICATE-----/g)?.length ?? 0;
  let parsed = 0;
  for (const block of blocks) {
    try {
      new X509Certificate(block);
      parsed++;
    } catch {
      // counted below
    }
  }
  if (parsed === 0 || parsed !== begun) {
    throw invalidSetting('ADS_WEBHOOK_CA_FILE', file, 'not a file of PEM certificates');
  }
}

/** The TLS files hold a PEM certificate and its private key (an openssl error otherwise names neither). */
function checkTlsPair(tls: { certFile: string; keyFile: string }): void {
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(fs.readFileSync(tls.certFile));
  } catch {
    throw invalidSetting('ADS_TLS_CERT', tls.certFile, 'not a PEM certificate');
  }
  let key: ReturnType<typeof createPrivateKey>;
  try {
    key = createPrivateKey(fs.readFileSync(tls.keyFile));
  } catch {
    throw invalidSetting('ADS_TLS_KEY', tls.keyFile, 'not a PEM private key (or it needs a passphrase)');
  }
  if (!cert.checkPrivateKey(key)) {
    throw invalidSetting('ADS_TLS_KEY', tls.keyFile, `not the private key of ADS_TLS_CERT's certificate`);
  }
}

/** The listen error a bad ADS_HOST or ADS_PORT gives, as a ConfigError naming the setting. */
export function listenError(err: unknown, config: Readonly<Config>): unknown {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  const at = originOf('https', config.host, config.port).replace('https://', '');
  switch (code) {
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EAI_NONAME':
      return invalidSetting('ADS_HOST', config.host, `the name does not resolve (${code})`);
    case 'EADDRNOTAVAIL':
      return invalidSetting('ADS_HOST', config.host, `no interface of this machine has it (${code})`);
    case 'EADDRINUSE':
      return invalidSetting('ADS_PORT', String(config.port), `another process listens on ${at} (${code})`);
    case 'EACCES':
      return invalidSetting('ADS_PORT', String(config.port), `not allowed to listen on ${at} (${code})`);
    default:
      return err;
  }
}

function parseDatabaseUrl(
  url: string | undefined,
  dataDir: string,
  cwd: string,
  cacheMb: number,
): DatabaseConfig {
  if (!url) return { dialect: 'sqlite', file: path.join(dataDir, 'ads.sqlite'), cacheMb };
  if (/^postgres(ql)?:\/\//.test(url)) {
    // An empty host (`postgres://user@/db`, the local socket) is valid to pg but not to URL.
    if (
      !URL.canParse(url) &&
      !URL.canParse(url.replace(/^(postgres(?:ql)?:\/\/[^/]*@)(?=[/?]|$)/, '$1localhost'))
    )
      throw invalidSetting(
        'ADS_DATABASE_URL',
        url,
        'is not a valid URL (postgres://user:password@host:port/database)',
      );
    return { dialect: 'postgres', url };
  }
  const file = url.replace(/^sqlite:(\/\/)?/, '').replace(/^file:(\/\/)?/, '');
  if (!file) throw invalidSetting('ADS_DATABASE_URL', url, 'no file path');
  return { dialect: 'sqlite', file: path.resolve(cwd, file), cacheMb };
}

/** The name of an unfinished backup's working directory (`.partial-<pid>`) in `dir`, if any. */
function unfinishedBackup(dir: string): string | undefined {
  try {
    return fs.readdirSync(dir).find((name) => /^\.partial-\d+$/.test(name));
  } catch {
    return undefined;
  }
}
