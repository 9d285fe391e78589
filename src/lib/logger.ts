import pino, { type Logger } from 'pino';

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
