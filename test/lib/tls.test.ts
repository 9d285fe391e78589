import assert from 'node:assert/strict';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import type { Config } from '../../src/config.ts';
import { loadTls, STALE_TEMPORARY_MS } from '../../src/lib/tls.ts';

const matches = (pair: { key: Buffer; cert: Buffer }) =>
  new X509Certificate(pair.cert).checkPrivateKey(createPrivateKey(pair.key));

describe('generated TLS pair in the data directory', () => {
  const dirs: string[] = [];
  const config = () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ads-tls-'));
    dirs.push(dataDir);
    return { dataDir } as Config;
  };
  after(() => {
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  });

  it('gives every start at once the one pair that is on disk, and leaves no temporary files', async () => {
    const c = config();
    const pairs = await Promise.all(Array.from({ length: 4 }, () => loadTls(c)));
    const onDisk = fs.readFileSync(path.join(c.dataDir, 'tls', 'cert.pem'));
    for (const pair of pairs) {
      assert.ok(pair.cert.equals(onDisk), 'serves the certificate on disk');
      assert.ok(matches(pair));
    }
    assert.equal(pairs.filter((p) => p.generated !== null).length, 1, 'one start made it');
    assert.ok(matches({ key: fs.readFileSync(path.join(c.dataDir, 'tls', 'key.pem')), cert: onDisk }));
    assert.deepEqual(fs.readdirSync(c.dataDir), ['tls']);
    assert.equal(fs.statSync(path.join(c.dataDir, 'tls', 'key.pem')).mode & 0o777, 0o600);
    const later = await loadTls(c);
    assert.ok(later.cert.equals(onDisk));
    assert.equal(later.generated, null);
  });

  it('creates a missing data directory readable by its owner only', async () => {
    const parent = config().dataDir;
    const c = { dataDir: path.join(parent, 'new') } as Config;
    assert.ok(matches(await loadTls(c)));
    assert.equal(fs.statSync(c.dataDir).mode & 0o777, 0o700);
  });

  it('completes half a pair an older release left behind', async () => {
    const c = config();
    fs.mkdirSync(path.join(c.dataDir, 'tls'));
    fs.writeFileSync(path.join(c.dataDir, 'tls', 'key.pem'), 'half');
    const pair = await loadTls(c);
    assert.ok(matches(pair));
    assert.ok(pair.cert.equals(fs.readFileSync(path.join(c.dataDir, 'tls', 'cert.pem'))));
    assert.ok(pair.key.equals(fs.readFileSync(path.join(c.dataDir, 'tls', 'key.pem'))));
  });

  it('refuses a damaged pair on disk with what to do, not an OpenSSL line', async () => {
    const other = await loadTls(config());
    for (const [what, cert, key] of [
      ['empty', '', ''],
      ['truncated certificate', other.cert.subarray(0, 60), other.key],
      ['another pair’s key', null, other.key],
    ] as const) {
      const c = config();
      await loadTls(c);
      const dir = path.join(c.dataDir, 'tls');
      if (cert !== null) fs.writeFileSync(path.join(dir, 'cert.pem'), cert);
      fs.writeFileSync(path.join(dir, 'key.pem'), key);
      await assert.rejects(loadTls(c), (err: Error) => {
        assert.match(
          err.message,
          /^The TLS pair generated in .*tls cannot be used \(.+\): remove that directory/,
          what,
        );
        return true;
      });
    }
  });

  it('removes the temporary pair directories a crash left, but not one another start is writing', async () => {
    const c = config();
    const stale = path.join(c.dataDir, '.tls-crashed');
    const young = path.join(c.dataDir, '.tls-writing');
    for (const d of [stale, young]) {
      fs.mkdirSync(d);
      fs.writeFileSync(path.join(d, 'key.pem'), 'a private key');
    }
    const old = new Date(Date.now() - STALE_TEMPORARY_MS - 60_000);
    fs.utimesSync(stale, old, old);
    assert.ok(matches(await loadTls(c)));
    assert.deepEqual(fs.readdirSync(c.dataDir).sort(), ['.tls-writing', 'tls']);
    // Also when the pair is already there (the crashed start was not the one that wrote it).
    fs.mkdirSync(stale);
    fs.utimesSync(stale, old, old);
    assert.equal((await loadTls(c)).generated, null);
    assert.ok(!fs.existsSync(stale));
  });
});
