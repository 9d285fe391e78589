import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

/** Encrypts and decrypts short secrets for storage at rest. */
export interface SecretBox {
  /** Encrypts `plain` into `v1.<iv>.<ciphertext>.<tag>` (base64url parts, fresh random IV). */
  seal(plain: string): string;
  /** Decrypts a sealed value; throws if it is malformed, tampered with or sealed under another key. */
  open(sealed: string): string;
  /**
   * HMAC-SHA256 of `data` (base64url) under a key derived from this box's key for `purpose`: a
   * digest of a request that may hold a secret, which without the key cannot be checked against
   * guesses.
   */
  mac(purpose: string, data: string): string;
}

const VERSION = 'v1';
const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_FILE = 'secret.key';
const BASE64URL = /^[A-Za-z0-9_-]*$/;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

// The version prefix is authenticated too, so a value cannot be relabelled as another format.
const AAD = Buffer.from(VERSION, 'utf8');

function decodePart(part: string): Buffer | null {
  return BASE64URL.test(part) ? Buffer.from(part, 'base64url') : null;
}

/** AES-256-GCM secret box over a 32-byte key. */
export function createSecretBox(key: Buffer): SecretBox {
  if (!Buffer.isBuffer(key) || key.length !== KEY_BYTES) {
    throw new Error(`secret-box key must be exactly ${KEY_BYTES} bytes`);
  }
  const boxKey = Buffer.from(key); // a copy, so later changes to the caller's buffer do not matter
  const macKeys = new Map<string, Buffer>();

  return {
    seal(plain: string): string {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', boxKey, iv, { authTagLength: TAG_BYTES });
      cipher.setAAD(AAD);
      const ciphertext = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
      const tag = cipher.getAuthTag();
      return [VERSION, iv, ciphertext, tag]
        .map((p) => (typeof p === 'string' ? p : p.toString('base64url')))
        .join('.');
    },

    mac(purpose: string, data: string): string {
      let macKey = macKeys.get(purpose);
      if (!macKey) {
        macKey = createHmac('sha256', boxKey).update(`ads mac: ${purpose}`).digest();
        macKeys.set(purpose, macKey);
      }
      return createHmac('sha256', macKey).update(data).digest('base64url');
    },

    open(sealed: string): string {
      const parts = typeof sealed === 'string' ? sealed.split('.') : [];
      if (parts.length !== 4 || parts[0] !== VERSION) {
        throw new Error('secret-box: malformed sealed value (expected v1.<iv>.<ciphertext>.<tag>)');
      }
      const iv = decodePart(parts[1]!);
      const ciphertext = decodePart(parts[2]!);
      const tag = decodePart(parts[3]!);
      if (!iv || !ciphertext || !tag || iv.length !== IV_BYTES || tag.length !== TAG_BYTES) {
        throw new Error('secret-box: malformed sealed value (bad iv, ciphertext or tag)');
      }
      const decipher = createDecipheriv('aes-256-gcm', boxKey, iv, { authTagLength: TAG_BYTES });
      decipher.setAAD(AAD);
      decipher.setAuthTag(tag);
      try {
        return Buffer.concat([decipher.update(ciphertext), decipher.final()]).toString('utf8');
      } catch {
        throw new Error('secret-box: cannot open sealed value (tampered with or sealed under another key)');
      }
    },
  };
}

/** The key a base64 text holds, or null unless it is base64 of exactly KEY_BYTES bytes. */
export function parseKey(text: string): Buffer | null {
  const trimmed = text.trim();
  const key = BASE64.test(trimmed) ? Buffer.from(trimmed, 'base64') : null;
  return key && key.length === KEY_BYTES ? key : null;
}

/** What a valid key looks like, for error messages. */
export const KEY_FORMAT = `base64 of exactly ${KEY_BYTES} bytes`;

function decodeKey(text: string, source: string): Buffer {
  const key = parseKey(text);
  if (!key) throw new Error(`${source} must be ${KEY_FORMAT}`);
  return key;
}

function readKeyFile(file: string): Buffer {
  return decodeKey(fs.readFileSync(file, 'utf8'), `key file ${file}`);
}

function isCode(err: unknown, code: string): boolean {
  return (err as NodeJS.ErrnoException | null)?.code === code;
}

/** Where the generated key lives: `<dataDir>/secret.key`. */
export const keyFileOf = (dataDir: string) => path.join(dataDir, KEY_FILE);

/**
 * The secret-box key: decoded from `keyBase64` (the setting) when given, else read from
 * `<dataDir>/secret.key`, which is created (base64, mode 0600) on first use.
 */
export function loadOrCreateKey(opts: { dataDir: string; keyBase64?: string }): Buffer {
  if (opts.keyBase64 !== undefined) return decodeKey(opts.keyBase64, 'secret-box key setting');

  const file = path.join(opts.dataDir, KEY_FILE);
  try {
    return readKeyFile(file);
  } catch (err) {
    if (!isCode(err, 'ENOENT')) throw err;
  }

  fs.mkdirSync(opts.dataDir, { recursive: true, mode: 0o700 });
  const key = randomBytes(KEY_BYTES);
  const temp = path.join(opts.dataDir, `.${KEY_FILE}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  const fd = fs.openSync(temp, 'wx', 0o600);
  try {
    fs.writeFileSync(fd, `${key.toString('base64')}\n`);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  try {
    // link() publishes the complete file atomically and fails if another process won the race,
    // where rename() would silently replace a key that process may already be using.
    fs.linkSync(temp, file);
  } catch (err) {
    if (isCode(err, 'EEXIST')) {
      fs.rmSync(temp, { force: true });
      return readKeyFile(file);
    }
    // Filesystems without hard links: fall back to rename, still never over an existing key.
    if (fs.existsSync(file)) {
      fs.rmSync(temp, { force: true });
      return readKeyFile(file);
    }
    fs.renameSync(temp, file);
    return key;
  }
  fs.rmSync(temp, { force: true });
  return key;
}
