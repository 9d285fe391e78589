import pino, { type Logger } from 'pino';
import { isoString } from './time.ts';

// Issued credentials (API keys `ads_…`, invitation tokens `adsinv_…`) wherever they sit in a string,
// percent-encoded or not: a path may hold `ads%5F…`, or `%20ads_…` (after "Bearer "), where a word
// boundary before `ads` does not exist. No boundary is asked for: masking a little more is harmless.
// Any of its letters may be percent-encoded too (`%61ds_…` is `ads_…` to the router).
const CREDENTIAL =
  /((?:a|%[46]1)(?:d|%[46]4)(?:s|%[57]3)(?:(?:i|%[46]9)(?:n|%[46]e)(?:v|%[57]6))?)(?:_|%5f)(?:[A-Za-z0-9_-]|%[0-9a-f]{2}){16,}/gi;
const masked = (_match: string, prefix: string) => `${decodeURIComponent(prefix).toLowerCase()}_[redacted]`;

/**
 * A URL as logged: query values and anything shaped like a credential masked. Unmatched routes log
 * the raw URL, and a client may put a key or an invitation link's token in it.
 */
export function scrubUrl(url: string): string {
  const q = url.indexOf('?');
  const pathPart = (q === -1 ? url : url.slice(0, q)).replace(CREDENTIAL, masked);
  if (q === -1) return pathPart;
  const query = url
    .slice(q + 1)
    .split('&')
    .map((pair) => {
      // The name is masked like the path (a key may be sent as a name), the value always.
      const eq = pair.indexOf('=');
      const name = (eq === -1 ? pair : pair.slice(0, eq)).replace(CREDENTIAL, masked);
      return eq === -1 ? name : `${name}=[redacted]`;
    })
    .join('&');
  return `${pathPart}?${query}`;
}

/** What a batch is written to: pino's destination (SonicBoom), or anything with `write`. */
interface LineSink {
  write(text: string): unknown;
}

/**
 * A log destination that gathers the lines written in one event-loop turn and hands them to `out`
 * as one string when the turn ends (`setImmediate`), or at once on `flushSync`/`flush`. Lines keep
 * their order. A loaded server answers several requests per turn, so their request lines become
 * one write.
 */
export class TurnBatchedDestination {
  #pending = '';
  constructor(private readonly out: LineSink) {}

  write(line: string): boolean {
    if (this.#pending === '') setImmediate(this.#endOfTurn);
    this.#pending += line;
    return true;
  }

  /** Writes what is pending now (pino's `logger.flush` and the exit path call it). */
  flushSync(): void {
    if (this.#pending === '') return;
    const text = this.#pending;
    this.#pending = '';
    this.out.write(text);
  }

  flush(cb?: (err?: Error) => void): void {
    this.flushSync();
    cb?.();
  }

  readonly #endOfTurn = () => this.flushSync();
}

let stderrDestination: TurnBatchedDestination | undefined;

/**
 * The process's stderr destination, made once: pino's SonicBoom in synchronous mode (a blocking
 * `write(2)`, as Node itself writes stderr to files and pipes on Linux) behind a turn batcher.
 * pino's default asynchronous mode hands every write to libuv's thread pool; on a loaded 2-core
 * machine waking that thread cost more than the write (docs/benchmarks.md, "Notes: the log line's
 * write"). Lines still pending when the process exits are written by the `exit` listener.
 */
function stderr(): TurnBatchedDestination {
  if (!stderrDestination) {
    const destination = new TurnBatchedDestination(pino.destination({ dest: 2, sync: true }));
    process.on('exit', () => destination.flushSync());
    stderrDestination = destination;
  }
  return stderrDestination;
}

/** Writes the stderr logger's pending lines now: before text written to stderr directly. */
export function flushStderrLogs(): void {
  stderrDestination?.flushSync();
}

/** The service logger: JSON lines on stderr, secrets redacted wherever they appear. */
export function createLogger(level: string, destination: pino.DestinationStream = stderr()): Logger {
  return pino(
    {
      level,
      base: { service: 'ads' },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: {
        log: (obj) => (typeof obj.url === 'string' ? { ...obj, url: scrubUrl(obj.url) } : obj),
      },
      redact: {
        paths: [
          'req.headers.authorization',
          'headers.authorization',
          'authorization',
          'key',
          'token',
          'secret',
          '*.key',
          '*.token',
          '*.secret',
          '*.password',
        ],
        censor: '[redacted]',
      },
    },
    destination,
  );
}

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';
type LogArgs = [obj: unknown, msg?: string, ...args: unknown[]];

/**
 * A request's logger whose pino child (the request id bound) is made on its first line, not when
 * the request arrives: most requests never log through it (their one line is the request line
 * below), and making a child per request was a measurable share of a cheap read.
 */
export class LazyChildLogger {
  #child: Logger | undefined;
  constructor(
    private readonly parent: Logger,
    private readonly bindings: Record<string, unknown>,
    private readonly options: pino.ChildLoggerOptions,
  ) {}

  private get real(): Logger {
    this.#child ??= this.parent.child(this.bindings, this.options);
    return this.#child;
  }

  get level(): string {
    return this.#child?.level ?? this.options.level ?? this.parent.level;
  }
  set level(level: string) {
    this.real.level = level;
  }

  /** Who decides whether a level is on: the child once made, or when it sets its own level. */
  private get gate(): Logger {
    return this.#child ?? (this.options.level ? this.real : this.parent);
  }

  private log(level: Level, args: LogArgs) {
    if (!this.gate.isLevelEnabled(level)) return;
    (this.real[level] as (...a: unknown[]) => void)(...args);
  }

  fatal = (...args: LogArgs) => this.log('fatal', args);
  error = (...args: LogArgs) => this.log('error', args);
  warn = (...args: LogArgs) => this.log('warn', args);
  info = (...args: LogArgs) => this.log('info', args);
  debug = (...args: LogArgs) => this.log('debug', args);
  trace = (...args: LogArgs) => this.log('trace', args);
  silent = () => {};
  isLevelEnabled = (level: string) => this.gate.isLevelEnabled(level);
  child = (bindings: pino.Bindings, options?: pino.ChildLoggerOptions) => this.real.child(bindings, options);
}

/** What the request line says about one answered request. */
export interface RequestLine {
  requestId: string;
  method: string;
  url: string;
  status: number;
  ms: number;
}

/**
 * Writes the one `info` line per answered request, as `logger.info({ request_id, method, url,
 * status, ms }, 'request')` would, but formatted directly: its fields are fixed and hold no secret
 * (the URL is scrubbed here as the logger's formatter does), so pino's redaction pass and object
 * walk are skipped. The line goes to the logger's own destination stream, which every pino logger
 * has. (The service's logger writes to a SonicBoom destination; a pino multistream, which needs
 * pino to tell it each line's level, is not used with it.)
 */
export function requestLineWriter(logger: Logger): (line: RequestLine) => void {
  const stream = (logger as unknown as Record<symbol, { write(s: string): unknown }>)[
    pino.symbols.streamSym
  ]!;
  const base = JSON.stringify(logger.bindings()).slice(1, -1);
  return (line) => {
    if (!logger.isLevelEnabled('info')) return;
    const url = scrubUrl(line.url);
    stream.write(
      `{"level":30,"time":"${isoString(Date.now())}"${base ? `,${base}` : ''},"request_id":${JSON.stringify(line.requestId)},"method":${JSON.stringify(line.method)},"url":${JSON.stringify(url)},"status":${line.status},"ms":${line.ms},"msg":"request"}\n`,
    );
  };
}
