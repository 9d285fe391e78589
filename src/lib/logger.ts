import pino, { type Logger } from 'pino';

// Issued credentials (API keys `ads_…`, invitation tokens `adsinv_…`) wherever they sit in a string.
const CREDENTIAL = /\b(ads|adsinv)_[A-Za-z0-9_-]{16,}/g;

/**
 * A URL as logged: query values and anything shaped like a credential masked. Unmatched routes log
 * the raw URL, and a client may put a key or an invitation link's token in it.
 */
export function scrubUrl(url: string): string {
  const q = url.indexOf('?');
  const pathPart = (q === -1 ? url : url.slice(0, q)).replace(CREDENTIAL, '$1_[redacted]');
  if (q === -1) return pathPart;
  const query = url
    .slice(q + 1)
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      return eq === -1 ? pair.replace(CREDENTIAL, '$1_[redacted]') : `${pair.slice(0, eq)}=[redacted]`;
    })
    .join('&');
  return `${pathPart}?${query}`;
}

/** The service logger: JSON lines on stderr, secrets redacted wherever they appear. */
export function createLogger(
  level: string,
  destination: pino.DestinationStream = pino.destination(2),
): Logger {
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
