// `node --import tsx scripts/dump-openapi.ts [out.json]`: builds the app on a throw-away SQLite
// database and writes the OpenAPI document it serves, so CI lints and the client is typed from exactly
// what `GET /v1/openapi.json` answers. Without an argument the JSON goes to stdout.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { migrate, openDatabase } from '../src/db/database.ts';
import { createRateLimiter } from '../src/ratelimit/limiter.ts';

/** The document as the service serves it, with a fixed example server URL so the output is stable. */
export async function dumpOpenApi(): Promise<Record<string, unknown>> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ads-openapi-'));
  try {
    const config = loadConfig({
      ADS_DATA_DIR: dataDir,
      ADS_LOG_LEVEL: 'silent',
      ADS_PUBLIC_URL: 'https://localhost:8443',
    });
    const database = openDatabase(config.database);
    try {
      await migrate(database);
      const logger = pino({ level: 'silent' });
      const rateLimiter = createRateLimiter({ logger });
      const app = await buildApp({ config, database, clock: Date.now, logger, rateLimiter });
      try {
        await app.ready();
        return app.swagger() as unknown as Record<string, unknown>;
      } finally {
        await app.close();
      }
    } finally {
      await database.close();
    }
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

if (import.meta.filename === path.resolve(process.argv[1] ?? '')) {
  const json = `${JSON.stringify(await dumpOpenApi(), null, 2)}\n`;
  const out = process.argv[2];
  if (out) {
    fs.mkdirSync(path.dirname(path.resolve(out)), { recursive: true });
    fs.writeFileSync(out, json);
  } else process.stdout.write(json);
}
