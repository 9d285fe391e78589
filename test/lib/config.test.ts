import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import selfsigned from 'selfsigned';
import {
  checkSettingPaths,
  defaultPublicUrl,
  listenError,
  loadConfig,
  originOf,
  redact,
} from '../../src/config.ts';

describe('URLs built from the listening address', () => {
  it('puts an IPv6 host in brackets, and nothing else', () => {
    assert.equal(originOf('https', '::1', 8443), 'https://[::1]:8443');
    assert.equal(originOf('http', '127.0.0.1', 80), 'http://127.0.0.1:80');
    assert.equal(originOf('https', 'api.example.com', 443), 'https://api.example.com:443');
    assert.equal(defaultPublicUrl('::', 3000), 'https://[::]:3000');
  });

  it('ADS_PUBLIC_URL defaults to the HTTPS origin of ADS_HOST and ADS_PORT', () => {
    const config = loadConfig({ ADS_DATA_DIR: '/tmp/ads-config-test', ADS_HOST: '::1', ADS_PORT: '9443' });
    assert.equal(config.publicUrl, 'https://[::1]:9443');
    assert.equal(config.publicUrlGiven, false);
  });
});

describe('bad settings', () => {
  const refusal = (env: Record<string, string>) => {
    try {
      loadConfig({ ADS_DATA_DIR: '/tmp/ads-config-test', ...env });
    } catch (err) {
      return (err as Error).message;
    }
    assert.fail(`accepted ${JSON.stringify(env)}`);
  };

  it('name the setting but never show a secret or a URL password', () => {
    const secret = refusal({ ADS_SECRET_KEY: 's3cr3t!!' });
    assert.match(secret, /ADS_SECRET_KEY/);
    assert.ok(!secret.includes('s3cr3t'), secret);
    const db = refusal({ ADS_DATABASE_URL: 'mysql://app:hunter2@db/x' });
    assert.match(db, /ADS_DATABASE_URL="mysql:\/\/app:\*\*\*@db\/x"/);
    assert.ok(!db.includes('hunter2'), db);
    const redis = refusal({ ADS_REDIS_URL: 'memcache://u:pw0rd@h' });
    assert.ok(!redis.includes('pw0rd'), redis);
    // Malformed because the password holds an unescaped / or @: still masked.
    for (const url of ['redis://u:Pw0rd/Secret@127.0.0.1:99999', 'redis://u:Pw0rd@Secret@127.0.0.1:99999']) {
      const line = refusal({ ADS_REDIS_URL: url });
      assert.match(line, /ADS_REDIS_URL="redis:\/\/u:\*\*\*@127\.0\.0\.1:99999"/);
      assert.ok(!line.includes('Pw0rd') && !line.includes('Secret'), line);
    }
    // A PostgreSQL URL that cannot be parsed (a port out of range) is named here, not at connect.
    const pg = refusal({ ADS_DATABASE_URL: 'postgres://app:hunter2@db:99999/x' });
    assert.match(
      pg,
      /^Invalid setting ADS_DATABASE_URL="postgres:\/\/app:\*\*\*@db:99999\/x": is not a valid URL/,
    );
    assert.ok(!pg.includes('hunter2'), pg);
    // The local socket forms pg accepts stay valid.
    for (const url of [
      'postgres://app@/x',
      'postgres:///x?host=/var/run/postgresql',
      'postgresql://[::1]:5432/x',
    ])
      assert.equal(loadConfig({ ADS_DATABASE_URL: url }).database.dialect, 'postgres', url);
  });

  it('never show a password in a URL of a malformed form, or in a query parameter', () => {
    const cases: Record<string, string>[] = [
      { ADS_REDIS_URL: 'redis//:RedisPw3Mn6Q@127.0.0.1:6379' },
      { ADS_REDIS_URL: 'redis:/:RedisPw3Mn6Q@127.0.0.1:6379' },
      { ADS_SMTP_URL: 'smtp:/smtpuser:RedisPw3Mn6Q@mail.example.com:587' },
      { ADS_SMTP_URL: 'smtpuser:RedisPw3Mn6Q@mail.example.com:587' },
      { ADS_DATABASE_URL: 'postgres:/adsrev:RedisPw3Mn6Q@127.0.0.1/db' },
      { ADS_DATABASE_URL: 'postgres://127.0.0.1:99999/db?user=adsrev&password=RedisPw3Mn6Q' },
      { ADS_REDIS_URL: 'redis://127.0.0.1:99999/0?password=RedisPw3Mn6Q' },
    ];
    for (const env of cases) {
      const line = refusal(env);
      assert.match(line, /^Invalid setting ADS_/, line);
      assert.ok(!line.includes('RedisPw3'), line);
    }
    assert.equal(
      redact('ADS_SMTP_URL', 'smtp://mail.example.com?pass=x1&secure=true'),
      'smtp://mail.example.com?pass=***&secure=true',
    );
    assert.equal(redact('ADS_SMTP_URL', 'smtpuser:pw@mail:587'), 'smtpuser:***@mail:587');
    // A setting that holds no URL is shown whole: the operator must see what is wrong with it.
    const from = refusal({ ADS_MAIL_FROM: 'Acme: Support <support@acme.example' });
    assert.match(from, /ADS_MAIL_FROM="Acme: Support <support@acme\.example"/);
  });

  it('never show PEM text given where a file path belongs', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ads-pem-setting-'));
    try {
      fs.writeFileSync(path.join(dir, 'cert.pem'), 'a certificate');
      const pem =
        '-----BEGIN PRIVATE KEY-----\nMIIEvAIBADANBgkqhkiG9w0BAQEFAASCBKYwPemBody\n-----END PRIVATE KEY-----\n';
      for (const env of [
        { ADS_TLS_CERT: path.join(dir, 'cert.pem'), ADS_TLS_KEY: pem },
        { ADS_TLS_CERT: pem, ADS_TLS_KEY: path.join(dir, 'key.pem') },
        { ADS_WEBHOOK_CA_FILE: pem },
      ]) {
        let line = '';
        try {
          checkSettingPaths(loadConfig({ ADS_DATA_DIR: dir, ...env }), { tls: true });
        } catch (err) {
          line = (err as Error).message;
        }
        assert.match(line, /^Invalid setting ADS_(TLS_(CERT|KEY)|WEBHOOK_CA_FILE)="\(hidden: PEM text/, line);
        assert.ok(!line.includes('PemBody') && !line.includes('BEGIN'), line);
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('say in words what a setting of the wrong form must be, never the pattern that checks it', () => {
    const cases: [Record<string, string>, RegExp][] = [
      [{ ADS_PORT: 'abc' }, /^Invalid setting ADS_PORT="abc": must be a port number, 0 to 65535\.$/],
      [{ ADS_REDIS_URL: 'http://x' }, /: must be a redis:\/\/ or rediss:\/\/ URL\.$/],
      [{ ADS_DATABASE_URL: 'mysql://x' }, /: must be a postgres:\/\/ URL, or a SQLite file as sqlite:/],
      [{ ADS_PUBLIC_URL: 'ftp://x' }, /: must be an https:\/\/ or http:\/\/ URL\.$/],
      [{ ADS_SMTP_URL: 'mail.example.com' }, /: must be an smtp:\/\/ or smtps:\/\/ URL\.$/],
      [
        { ADS_SECRET_KEY: 'short' },
        /^Invalid setting ADS_SECRET_KEY="\(hidden\)": must be base64 of exactly 32 bytes/,
      ],
      [
        { ADS_WEBHOOK_RETRY_SCHEDULE: '1;2' },
        /: must be seconds separated by commas, such as 60,300,1800\.$/,
      ],
      [{ ADS_BODY_LIMIT: '0' }, /: must be a whole number above 0\.$/],
      [{ ADS_HEAP_GROWTH_PERCENT: '-1' }, /: must be a whole number, 0 to 9999\.$/],
    ];
    for (const [env, expected] of cases) {
      const said = refusal(env);
      assert.match(said, expected, said);
      assert.doesNotMatch(said, /pattern|\^|\$"/, said);
    }
  });

  it('refuse a retry step no date holds, a page cache SQLite cannot take, and a sender with no address', () => {
    assert.match(
      refusal({ ADS_WEBHOOK_RETRY_SCHEDULE: '60,99999999999999' }),
      /^Invalid setting ADS_WEBHOOK_RETRY_SCHEDULE="60,99999999999999": each step at most 2592000 seconds/,
    );
    assert.deepEqual(
      loadConfig({ ADS_WEBHOOK_RETRY_SCHEDULE: '1,2592000' }).webhook.retrySchedule,
      [1, 2592000],
    );
    assert.match(
      refusal({ ADS_SQLITE_CACHE_MB: '3000000' }),
      /^Invalid setting ADS_SQLITE_CACHE_MB="3000000": at most 1048576/,
    );
    for (const from of ['Ops Team', 'garbage', 'Ops <nobody>', '"a b"@']) {
      assert.match(
        refusal({ ADS_MAIL_FROM: from }),
        /^Invalid setting ADS_MAIL_FROM=.*must be an address/,
        from,
      );
    }
    for (const from of ['ops@example.com', 'Ops Team <ops@example.com>', '"Ops, Inc." <ops@example.com>']) {
      assert.equal(loadConfig({ ADS_MAIL_FROM: from }).mailFrom, from);
    }
  });

  it('refuse a secret key that is not base64 of 32 bytes, at load rather than at first use', () => {
    for (const key of [
      Buffer.alloc(31, 7).toString('base64'),
      Buffer.alloc(33, 7).toString('base64'),
      Buffer.alloc(32, 0xfb).toString('base64url'),
    ]) {
      const message = refusal({ ADS_SECRET_KEY: key });
      assert.match(message, /ADS_SECRET_KEY="\(hidden\)": must be base64 of exactly 32 bytes/);
      assert.ok(!message.includes(key), message);
    }
    const key = Buffer.alloc(32, 0xfb).toString('base64');
    assert.equal(loadConfig({ ADS_SECRET_KEY: key }).secretKey, key);
  });

  it('refuse a webhook timeout no timer can hold and a public URL without a host', () => {
    assert.match(refusal({ ADS_WEBHOOK_TIMEOUT_MS: '3000000000' }), /ADS_WEBHOOK_TIMEOUT_MS.*at most 600000/);
    assert.equal(loadConfig({ ADS_WEBHOOK_TIMEOUT_MS: '600000' }).webhook.timeoutMs, 600_000);
    for (const url of ['https://', 'http://:8443', 'https://exa mple.com']) {
      assert.match(refusal({ ADS_PUBLIC_URL: url }), /ADS_PUBLIC_URL/, url);
    }
    assert.equal(
      loadConfig({ ADS_PUBLIC_URL: 'https://api.example.com/' }).publicUrl,
      'https://api.example.com',
    );
  });
});

describe('ADS_DATABASE_URL', () => {
  it('takes a plain path, relative or absolute, as the SQLite file, and refuses other schemes', () => {
    const at = (url: string) => loadConfig({ ADS_DATABASE_URL: url }, '/srv/app').database;
    assert.deepEqual(at('relative/ads.sqlite'), {
      dialect: 'sqlite',
      file: '/srv/app/relative/ads.sqlite',
      cacheMb: 64,
    });
    assert.equal((at('/var/lib/ads.sqlite') as { file: string }).file, '/var/lib/ads.sqlite');
    assert.equal((at('./a.sqlite') as { file: string }).file, '/srv/app/a.sqlite');
    assert.equal((at('sqlite:data/b.sqlite') as { file: string }).file, '/srv/app/data/b.sqlite');
    assert.equal(at('postgres://u@h/db').dialect, 'postgres');
    assert.throws(() => loadConfig({ ADS_DATABASE_URL: 'mysql://u@h/db' }), /ADS_DATABASE_URL/);
  });
});

describe('listen errors', () => {
  const config = loadConfig({ ADS_HOST: '::1', ADS_PORT: '443' });
  const fail = (code: string) => Object.assign(new Error(`listen ${code}`), { code });

  it('name ADS_HOST or ADS_PORT, with the system code', () => {
    const message = (code: string) => (listenError(fail(code), config) as Error).message;
    assert.match(
      message('EACCES'),
      /^Invalid setting ADS_PORT="443": not allowed to listen on \[::1\]:443 \(EACCES\)/,
    );
    assert.match(message('EADDRINUSE'), /^Invalid setting ADS_PORT="443": another process listens/);
    assert.match(message('EADDRNOTAVAIL'), /^Invalid setting ADS_HOST="::1"/);
    assert.match(message('EAI_AGAIN'), /^Invalid setting ADS_HOST="::1": the name does not resolve/);
  });

  it('pass any other error through unchanged', () => {
    const other = fail('EMFILE');
    assert.equal(listenError(other, config), other);
  });
});

describe('TLS files', () => {
  it('take a certificate and its own key; another key, or no PEM, names the setting', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ads-tls-'));
    try {
      const pems = await selfsigned.generate([{ name: 'commonName', value: 'localhost' }], {
        keyType: 'ec',
        curve: 'P-256',
      });
      const write = (name: string, text: string) => {
        fs.writeFileSync(path.join(dir, name), text);
        return path.join(dir, name);
      };
      const cert = write('cert.pem', pems.cert);
      const key = write('key.pem', pems.private);
      const other = write(
        'other.pem',
        generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({
          type: 'pkcs8',
          format: 'pem',
        }) as string,
      );
      const check = (certFile: string, keyFile: string) => () =>
        checkSettingPaths(loadConfig({ ADS_DATA_DIR: dir, ADS_TLS_CERT: certFile, ADS_TLS_KEY: keyFile }), {
          tls: true,
        });
      check(cert, key)();
      assert.throws(check(cert, other), /ADS_TLS_KEY=.*not the private key of ADS_TLS_CERT's certificate/);
      assert.throws(check(key, key), /ADS_TLS_CERT=.*not a PEM certificate/);
      assert.throws(check(cert, cert), /ADS_TLS_KEY=.*not a PEM private key/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
