import { createPrivateKey, X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Config } from '../config.ts';

/** Loads the configured certificate, or makes (once) a self-signed one for development in the data dir. */
export async function loadTls(
  config: Config,
): Promise<{ key: Buffer; cert: Buffer; generated: string | null }> {
  if (config.tls) {
    return {
      key: fs.readFileSync(config.tls.keyFile),
      cert: fs.readFileSync(config.tls.certFile),
      generated: null,
    };
  }
  const dir = path.join(config.dataDir, 'tls');
  const certFile = path.join(dir, 'cert.pem');
  const keyFile = path.join(dir, 'key.pem');
  removeStaleTemporaries(config.dataDir);
  if (fs.existsSync(certFile) && fs.existsSync(keyFile)) return readGeneratedPair(dir, certFile, keyFile);
  const notAfterDate = new Date(Date.now() + 825 * 24 * 3600 * 1000);
  // Loaded only here: with a certificate on disk, start-up skips the package (~60 ms).
  const { default: selfsigned } = await import('selfsigned');
  const pems = await selfsigned.generate([{ name: 'commonName', value: 'localhost' }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    notAfterDate,
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'extKeyUsage', serverAuth: true },
      {
        name: 'subjectAltName',
        altNames: [
          { type: 2, value: 'localhost' },
          { type: 7, ip: '127.0.0.1' },
          { type: 7, ip: '::1' },
        ],
      },
    ],
  });
  // The pair is written into a directory of its own, which then takes the place of `tls/` in one
  // rename: a crash never leaves half a pair, and of several processes starting at once on one
  // data dir exactly one pair wins; the others serve that one, so every instance presents the
  // certificate on disk (separate writes could leave one process's key beside another's cert).
  fs.mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  const tmp = fs.mkdtempSync(path.join(config.dataDir, '.tls-'));
  fs.chmodSync(tmp, 0o700);
  fs.writeFileSync(path.join(tmp, 'key.pem'), pems.private, { mode: 0o600 });
  fs.writeFileSync(path.join(tmp, 'cert.pem'), pems.cert, { mode: 0o644 });
  try {
    fs.renameSync(tmp, dir);
    return { key: Buffer.from(pems.private), cert: Buffer.from(pems.cert), generated: certFile };
  } catch (err) {
    fs.rmSync(tmp, { recursive: true, force: true });
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'ENOTEMPTY' && code !== 'EEXIST') throw err;
  }
  if (fs.existsSync(certFile) && fs.existsSync(keyFile)) return readGeneratedPair(dir, certFile, keyFile);
  // `tls/` holds something else (half a pair from an older release): write the pair into it.
  writeAtomic(keyFile, pems.private, 0o600);
  writeAtomic(certFile, pems.cert, 0o644);
  return { key: Buffer.from(pems.private), cert: Buffer.from(pems.cert), generated: certFile };
}

/**
 * The pair an earlier start generated in `dir`, checked: one damaged on disk (emptied, truncated,
 * edited, a key beside another pair's certificate) stops start-up with what to do, not with
 * OpenSSL's own line (`error:0480006C:PEM routines::no start line`).
 */
function readGeneratedPair(dir: string, certFile: string, keyFile: string) {
  const key = fs.readFileSync(keyFile);
  const cert = fs.readFileSync(certFile);
  let why: string | null = null;
  try {
    if (!new X509Certificate(cert).checkPrivateKey(createPrivateKey(key))) {
      why = 'the key is not the certificate’s';
    }
  } catch (err) {
    why = (err as Error).message;
  }
  if (why) {
    throw new Error(
      `The TLS pair generated in ${dir} cannot be used (${why}): remove that directory to have a ` +
        'new pair generated at the next start, or set ADS_TLS_CERT and ADS_TLS_KEY.',
    );
  }
  return { key, cert, generated: null };
}

/** A pair is written in well under a second; a `.tls-*` directory this old was left by a crash. */
export const STALE_TEMPORARY_MS = 10 * 60 * 1000;

/**
 * Removes the `.tls-*` directories that a process killed while writing its pair left behind: each
 * holds a private key nobody uses, which would otherwise stay in the data dir (and its backups).
 * Only old ones: a younger one may be another process's pair on its way to becoming `tls/`.
 */
function removeStaleTemporaries(dataDir: string): void {
  let names: string[];
  try {
    names = fs.readdirSync(dataDir);
  } catch {
    return;
  }
  const cutoff = Date.now() - STALE_TEMPORARY_MS;
  for (const name of names) {
    if (!name.startsWith('.tls-')) continue;
    const dir = path.join(dataDir, name);
    try {
      if (fs.statSync(dir).mtimeMs < cutoff) fs.rmSync(dir, { recursive: true, force: true });
    } catch {
      // Renamed or removed by its owner meanwhile.
    }
  }
}

function writeAtomic(file: string, content: string, mode: number) {
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, content, { mode });
  fs.renameSync(tmp, file);
}
