import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import BetterSqlite3 from 'better-sqlite3';
import type { Config } from '../config.ts';
import { UsageError } from './main.ts';

/**
 * `ads backup DIR`: a copy of ADS_DATA_DIR that is safe to take while the service runs. The files
 * (secret key, TLS files, the mail outbox) are copied as they are; the SQLite database goes through
 * SQLite's online backup, a consistent snapshot that includes what is still in the write-ahead log.
 * Copying a live WAL database file by file can give a copy that lacks recent writes or is corrupt.
 * A PostgreSQL database is not copied: that is pg_dump's job.
 */
export async function backupCommand(config: Readonly<Config>, argv: string[]): Promise<number> {
  const { positionals } = parseArgs({ args: argv, options: {}, allowPositionals: true });
  if (positionals.length !== 1) throw new UsageError('backup takes one argument: a new or empty directory');
  const dest = path.resolve(positionals[0]!);
  const source = path.resolve(config.dataDir);
  if (dest === source || dest.startsWith(`${source}${path.sep}`)) {
    throw new UsageError(`the backup directory must be outside ADS_DATA_DIR (${source})`);
  }
  if (fs.existsSync(dest) && (!fs.statSync(dest).isDirectory() || fs.readdirSync(dest).length > 0)) {
    throw new UsageError(`${dest} must be a new or empty directory`);
  }
  const database = config.database.dialect === 'sqlite' ? path.resolve(config.database.file) : null;
  if (database && !fs.existsSync(database)) throw new Error(`no database at ${database}`);
  const live = new Set(database ? ['', '-wal', '-shm', '-journal'].map((s) => `${database}${s}`) : []);
  fs.mkdirSync(dest, { recursive: true, mode: 0o700 });
  const out = (line: string) => process.stdout.write(`${line}\n`);

  let files = 0;
  if (fs.existsSync(source)) {
    fs.cpSync(source, dest, {
      recursive: true,
      preserveTimestamps: true,
      filter: (from) => {
        if (live.has(path.resolve(from))) return false;
        if (fs.statSync(from).isFile()) files++;
        return true;
      },
    });
  }
  out(`files: ${files} copied from ${source}`);

  if (database) {
    const inside = !path.relative(source, database).startsWith('..');
    const target = inside
      ? path.join(dest, path.relative(source, database))
      : path.join(dest, path.basename(database));
    fs.mkdirSync(path.dirname(target), { recursive: true });
    const raw = new BetterSqlite3(database, { readonly: true, fileMustExist: true });
    try {
      // In one step: a backup in steps starts over whenever the service writes in between, so on a
      // busy service it might never finish. One step holds a read snapshot while it copies.
      const { totalPages } = await raw.backup(target, { progress: () => 2 ** 30 });
      out(`database: ${target} (${totalPages} pages, one consistent snapshot)`);
    } finally {
      raw.close();
    }
  } else {
    out('database: PostgreSQL is not copied; back it up with pg_dump or your provider’s snapshots');
  }
  if (config.secretKey !== undefined) {
    out('secret key: set by ADS_SECRET_KEY, so not in the backup; the backup cannot be read without it');
  }
  return 0;
}
