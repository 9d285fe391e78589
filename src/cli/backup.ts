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
  if (positionals.length !== 1 || positionals[0] === '') {
    throw new UsageError('backup takes one argument: a new or empty directory');
  }
  const dest = path.resolve(positionals[0]!);
  const source = path.resolve(config.dataDir);
  // Compared as the file system resolves them: through a symbolic link (to the data directory, or
  // from the destination into it) the copy would otherwise go on copying itself.
  const realDest = realPathOf(dest);
  const realSource = realPathOf(source);
  if (realDest === realSource || realDest.startsWith(`${realSource}${path.sep}`)) {
    throw new UsageError(`the backup directory must be outside ADS_DATA_DIR (${source})`);
  }
  if (fs.existsSync(dest) && (!fs.statSync(dest).isDirectory() || fs.readdirSync(dest).length > 0)) {
    throw new UsageError(`${dest} must be a new or empty directory`);
  }
  const database = config.database.dialect === 'sqlite' ? path.resolve(config.database.file) : null;
  if (database && !fs.existsSync(database)) throw new Error(`no database at ${database}`);
  const live = new Set(database ? ['', '-wal', '-shm', '-journal'].map((s) => `${database}${s}`) : []);
  // With ADS_SECRET_KEY set, a secret.key left in the directory is not the key in use: copying it
  // would only make the backup look as if it carried its key.
  if (config.secretKey !== undefined) live.add(path.join(source, 'secret.key'));
  const out = (line: string) => process.stdout.write(`${line}\n`);

  // Built apart and published only once complete: a backup that fails part-way (disk full, a
  // damaged database) or is interrupted leaves no DEST that looks whole, which restored would have
  // started an empty service, with a new admin key, over the files of the old one. A new DEST is
  // built beside it and renamed; an existing empty one (a mount point, a directory with its own
  // owner and mode, a link to one) is kept, the backup built inside it and moved up into it.
  const existing = fs.existsSync(dest);
  const work = existing ? path.join(dest, `.partial-${process.pid}`) : `${dest}.partial-${process.pid}`;
  fs.rmSync(work, { recursive: true, force: true });
  fs.mkdirSync(work, { recursive: true, mode: 0o700 });
  // A signal is handled between event-loop turns, and the copy and the check each take one turn:
  // it is noted, and the backup stops at the next turn instead of finishing.
  let stoppedBy: NodeJS.Signals | undefined;
  const onSignal = (signal: NodeJS.Signals) => {
    stoppedBy = signal;
  };
  const checkpoint = async () => {
    await new Promise((resolve) => setImmediate(resolve));
    if (stoppedBy) throw new Error(`stopped by ${stoppedBy}; no backup was written`);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  const lines: string[] = [];
  try {
    const files = fs.existsSync(source) ? copyTree(source, work, live) : 0;
    out(`files: ${files} copied from ${source}`);
    await checkpoint();
    let name: string | undefined;
    if (database) {
      // Inside the data directory only if no symbolic link leads there: the copy of the directory
      // keeps links as links, and a database reached through one (`db -> /elsewhere`) would
      // otherwise be "copied" through the copied link onto the live file itself.
      const relative = path.relative(source, database);
      const inside =
        !relative.startsWith('..') && path.relative(realPathOf(source), realPathOf(database)) === relative;
      name = inside ? relative : path.basename(database);
      const target = path.join(work, name);
      // The copy holds every account's data: owner-only, as the service creates its own file. Made
      // afresh: a file already there (copied from the directory under the database's name) is
      // never written over.
      fs.mkdirSync(path.dirname(target), { recursive: true, mode: 0o700 });
      try {
        fs.closeSync(fs.openSync(target, 'wx', 0o600));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
        throw new Error(
          `ADS_DATA_DIR holds a file named ${name}, where the backup puts the database (${database}); rename or remove it`,
        );
      }
      const raw = new BetterSqlite3(database, { readonly: true, fileMustExist: true });
      let totalPages: number;
      try {
        // In one step: a backup in steps starts over whenever the service writes in between, so on
        // a busy service it might never finish. One step holds a read snapshot while it copies.
        ({ totalPages } = await raw.backup(target, { progress: () => 2 ** 30 }));
      } finally {
        raw.close();
      }
      await checkpoint();
      // SQLite's backup copies pages as they are, damaged ones included: a copy that cannot be
      // read back whole is refused rather than kept as a backup.
      const damage = quickCheck(target);
      if (damage !== undefined) {
        throw new Error(
          `the database ${database} is damaged (${damage}); no backup was written. Its readable rows can be saved with the sqlite3 shell's .recover`,
        );
      }
      await checkpoint();
      lines.push(
        `database: ${path.join(dest, name)} (${totalPages} pages, one consistent snapshot, checked)`,
      );
    } else {
      lines.push('database: PostgreSQL is not copied; back it up with pg_dump or your provider’s snapshots');
    }
    publish(work, dest, existing, name);
  } catch (err) {
    fs.rmSync(work, { recursive: true, force: true });
    throw err;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
  for (const line of lines) out(line);
  if (config.secretKey !== undefined) {
    out('secret key: set by ADS_SECRET_KEY, so not in the backup; the backup cannot be read without it');
  }
  return 0;
}

/**
 * Puts the finished backup in `work` at `dest`: one rename when `dest` did not exist; otherwise
 * each entry moved up into it (renames within one file system, in one turn, so no signal comes
 * between them), the database first and the secret key next: a kill -9 between two renames leaves
 * the database without its key, which start-up refuses when anything in it is sealed
 * (secret-check.ts), rather than a key beside no database, which would start an empty service.
 */
function publish(work: string, dest: string, existing: boolean, database: string | undefined): void {
  if (!existing) {
    fs.renameSync(work, dest);
    return;
  }
  const first = [database?.split(path.sep)[0], 'secret.key'];
  const entries = fs.readdirSync(work);
  const ordered = [
    ...first.filter((e) => e !== undefined && entries.includes(e)),
    ...entries.filter((e) => !first.includes(e)),
  ];
  for (const entry of ordered)
    fs.renameSync(path.join(work, entry as string), path.join(dest, entry as string));
  fs.rmdirSync(work);
}

/** The first problem `PRAGMA quick_check` finds in the SQLite file, or undefined when it is whole. */
function quickCheck(file: string): string | undefined {
  // Read-write although it only reads: the copy is in WAL mode, and a read-only connection would
  // leave an empty -wal and -shm beside it, which the last read-write one removes when it closes.
  const copy = new BetterSqlite3(file, { fileMustExist: true });
  try {
    const result = copy.pragma('quick_check(1)', { simple: true });
    return result === 'ok' ? undefined : String(result);
  } catch (err) {
    return (err as Error).message;
  } finally {
    copy.close();
  }
}

/** `p` with every symbolic link resolved, for the part of it that exists (the rest kept as is). */
function realPathOf(p: string): string {
  const rest: string[] = [];
  let at = p;
  for (;;) {
    try {
      return path.join(fs.realpathSync(at), ...rest);
    } catch (err) {
      const parent = path.dirname(at);
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || parent === at) return p;
      rest.unshift(path.basename(at));
      at = parent;
    }
  }
}

/**
 * Copies the directory `from` into `to` (which exists), leaving out `skip` (absolute paths) and the
 * temporary directories of a TLS pair being written (`.tls-*`, which hold a private key and are
 * removed or renamed a moment later). A file that vanishes between the listing and its copy (a mail
 * outbox temporary the service just renamed) is left out instead of failing the backup, as it would
 * have been had the listing come a moment later. Returns how many files were copied.
 */
function copyTree(from: string, to: string, skip: ReadonlySet<string>): number {
  let files = 0;
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(from, { withFileTypes: true });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw err;
  }
  for (const entry of entries) {
    const src = path.join(from, entry.name);
    const dst = path.join(to, entry.name);
    if (skip.has(path.resolve(src))) continue;
    try {
      if (entry.isDirectory()) {
        if (entry.name.startsWith('.tls-')) continue;
        // Writable while its contents are copied in; the source's mode (which may be read-only,
        // as a hardened `tls/` is) and times once they are.
        fs.mkdirSync(dst, { mode: 0o700 });
        const copied = copyTree(src, dst, skip);
        const { mode, atime, mtime } = fs.statSync(src);
        fs.chmodSync(dst, mode & 0o7777);
        fs.utimesSync(dst, atime, mtime);
        files += copied;
      } else if (entry.isSymbolicLink()) {
        fs.symlinkSync(fs.readlinkSync(src), dst);
      } else if (entry.isFile()) {
        fs.copyFileSync(src, dst);
        const { atime, mtime } = fs.statSync(src);
        fs.utimesSync(dst, atime, mtime);
        files++;
      }
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      // Gone mid-copy: leave out what was begun of it.
      fs.rmSync(dst, { recursive: true, force: true });
    }
  }
  return files;
}
