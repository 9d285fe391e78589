import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import { createSecretBox, loadOrCreateKey } from '../../src/lib/secret-box.ts';

const tmpRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'ads-secret-box-'));
after(() => fs.rmSync(tmpRoot, { recursive: true, force: true }));

const freshDir = () => fs.mkdtempSync(path.join(tmpRoot, 'data-'));

describe('createSecretBox', () => {
  const box = createSecretBox(randomBytes(32));

  it('round-trips ASCII, Unicode, empty and long secrets', () => {
    for (const plain of ['s3cret', 'clé-секрет-🔑', '', 'x'.repeat(256)]) {
      assert.equal(box.open(box.seal(plain)), plain);
    }
  });

  it('uses the versioned v1.<iv>.<ciphertext>.<tag> format without leaking the plain text', () => {
    const sealed = box.seal('hunter2');
    const parts = sealed.split('.');
    assert.equal(parts.length, 4);
    assert.equal(parts[0], 'v1');
    for (const part of parts.slice(1)) assert.match(part, /^[A-Za-z0-9_-]+$/);
    assert.equal(Buffer.from(parts[1]!, 'base64url').length, 12);
    assert.equal(Buffer.from(parts[3]!, 'base64url').length, 16);
    assert.ok(!sealed.includes('hunter2'));
  });

  it('uses a fresh random IV: sealing twice gives different values', () => {
    const a = box.seal('same');
    const b = box.seal('same');
    assert.notEqual(a, b);
    assert.notEqual(a.split('.')[1], b.split('.')[1]);
    assert.equal(box.open(a), box.open(b));
  });

  it('detects tampering with the IV, ciphertext or tag', () => {
    const sealed = box.seal('do not touch');
    const parts = sealed.split('.');
    for (const index of [1, 2, 3]) {
      const bytes = Buffer.from(parts[index]!, 'base64url');
      bytes[0] = bytes[0]! ^ 0x01;
      const tampered = parts.map((p, i) => (i === index ? bytes.toString('base64url') : p)).join('.');
      assert.throws(() => box.open(tampered), /tampered with or sealed under another key/);
    }
  });

  it('refuses a value sealed under another key', () => {
    const other = createSecretBox(randomBytes(32));
    assert.throws(() => other.open(box.seal('mine')), /tampered with or sealed under another key/);
  });

  it('refuses malformed values with a clear error', () => {
    const sealed = box.seal('x');
    const [, iv, ct, tag] = sealed.split('.');
    for (const bad of [
      '',
      'plain',
      `v2.${iv}.${ct}.${tag}`,
      `v1.${iv}.${ct}`,
      `v1.${iv}.${ct}.${tag}.x`,
      `v1.${iv}.${ct}.${tag!.slice(4)}`,
      `v1.${iv}.${ct}.${tag}!`,
      `v1.AAAA.${ct}.${tag}`,
    ]) {
      assert.throws(() => box.open(bad), /secret-box: malformed sealed value/, bad);
    }
  });

  it('macs the same data alike under one key and purpose, and apart under another key or purpose', () => {
    const key = randomBytes(32);
    const mac = createSecretBox(key).mac('fingerprint', 'POST /v1/webhooks secret');
    assert.match(mac, /^[A-Za-z0-9_-]{43}$/);
    assert.equal(createSecretBox(Buffer.from(key)).mac('fingerprint', 'POST /v1/webhooks secret'), mac);
    assert.notEqual(createSecretBox(randomBytes(32)).mac('fingerprint', 'POST /v1/webhooks secret'), mac);
    assert.notEqual(createSecretBox(key).mac('other', 'POST /v1/webhooks secret'), mac);
    assert.notEqual(createSecretBox(key).mac('fingerprint', 'POST /v1/webhooks secreT'), mac);
  });

  it('requires a 32-byte key', () => {
    assert.throws(() => createSecretBox(randomBytes(16)), /exactly 32 bytes/);
    assert.throws(() => createSecretBox(Buffer.alloc(0)), /exactly 32 bytes/);
  });
});

describe('loadOrCreateKey', () => {
  it('creates <dataDir>/secret.key with mode 0600 and reuses it', () => {
    const dataDir = freshDir();
    const first = loadOrCreateKey({ dataDir });
    assert.equal(first.length, 32);
    const file = path.join(dataDir, 'secret.key');
    assert.equal(fs.statSync(file).mode & 0o777, 0o600);
    assert.equal(Buffer.from(fs.readFileSync(file, 'utf8').trim(), 'base64').equals(first), true);
    assert.deepEqual(fs.readdirSync(dataDir), ['secret.key']); // no temp file left behind
    const second = loadOrCreateKey({ dataDir });
    assert.equal(second.equals(first), true);
    const sealed = createSecretBox(first).seal('persisted');
    assert.equal(createSecretBox(second).open(sealed), 'persisted');
  });

  it('gives every concurrent creator the same key', async () => {
    const dataDir = freshDir();
    const goFile = path.join(tmpRoot, `go-${randomBytes(4).toString('hex')}`);
    const moduleUrl = pathToFileURL(path.resolve(import.meta.dirname, '../../src/lib/secret-box.ts')).href;
    // Each child reports ready, then waits at a barrier so all of them race for the key file at once.
    const script = `import fs from 'node:fs';
      import { loadOrCreateKey } from ${JSON.stringify(moduleUrl)};
      const [dataDir, goFile] = process.argv.slice(1);
      process.stdout.write('ready\\n');
      const deadline = Date.now() + 10000;
      while (!fs.existsSync(goFile) && Date.now() < deadline) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1);
      process.stdout.write(loadOrCreateKey({ dataDir }).toString('base64'));`;
    const children = Array.from({ length: 6 }, () =>
      spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script, dataDir, goFile], {
        cwd: path.resolve(import.meta.dirname, '../..'),
        stdio: ['ignore', 'pipe', 'inherit'],
      }),
    );
    const outputs = children.map((child) => {
      let out = '';
      const ready = new Promise<void>((resolve) =>
        child.stdout.on('data', (chunk: Buffer) => {
          out += chunk.toString();
          if (out.startsWith('ready\n')) resolve();
        }),
      );
      const done = new Promise<string>((resolve, reject) =>
        child.on('close', (code) =>
          code === 0 ? resolve(out.slice('ready\n'.length)) : reject(new Error(`exit ${code}`)),
        ),
      );
      return { ready, done };
    });
    await Promise.all(outputs.map((o) => o.ready));
    fs.writeFileSync(goFile, '');
    const keys = await Promise.all(outputs.map((o) => o.done));
    const onDisk = fs.readFileSync(path.join(dataDir, 'secret.key'), 'utf8').trim();
    for (const key of keys) assert.equal(key, onDisk);
    assert.deepEqual(fs.readdirSync(dataDir), ['secret.key']);
  });

  it('creates a missing data directory', () => {
    const dataDir = path.join(freshDir(), 'nested', 'data');
    assert.equal(loadOrCreateKey({ dataDir }).length, 32);
    assert.equal(fs.existsSync(path.join(dataDir, 'secret.key')), true);
  });

  it('keeps a key that already exists instead of replacing it', () => {
    const dataDir = freshDir();
    const existing = randomBytes(32);
    fs.writeFileSync(path.join(dataDir, 'secret.key'), existing.toString('base64'), { mode: 0o600 });
    assert.equal(loadOrCreateKey({ dataDir }).equals(existing), true);
  });

  it('refuses a key file that is not base64 of 32 bytes', () => {
    const dataDir = freshDir();
    fs.writeFileSync(path.join(dataDir, 'secret.key'), randomBytes(16).toString('base64'), { mode: 0o600 });
    assert.throws(
      () => loadOrCreateKey({ dataDir }),
      /key file .*secret\.key must be base64 of exactly 32 bytes/,
    );
  });

  it('uses keyBase64 from the setting and does not touch the data directory', () => {
    const dataDir = freshDir();
    const key = randomBytes(32);
    assert.equal(loadOrCreateKey({ dataDir, keyBase64: key.toString('base64') }).equals(key), true);
    assert.deepEqual(fs.readdirSync(dataDir), []);
  });

  it('rejects a keyBase64 of the wrong length or not base64', () => {
    const dataDir = freshDir();
    for (const keyBase64 of [
      randomBytes(16).toString('base64'),
      randomBytes(33).toString('base64'),
      '',
      'not base64!',
    ]) {
      assert.throws(
        () => loadOrCreateKey({ dataDir, keyBase64 }),
        /setting must be base64 of exactly 32 bytes/,
      );
    }
  });
});
