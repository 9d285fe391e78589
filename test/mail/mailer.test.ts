import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import type { AddressInfo, Socket } from 'node:net';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { renderInvitationEmail } from '../../src/mail/invitation-email.ts';
import { createMailer, parseSmtpUrl } from '../../src/mail/mailer.ts';
import type { TestSmtpServer } from '../helpers/smtp-server.ts';
import { parseMessage, partOf, startSmtpServer } from '../helpers/smtp-server.ts';

const FROM = 'Account Data Service <no-reply@ads.test>';

function invitation(email = 'new.member@example.test') {
  const token = randomBytes(32).toString('base64url');
  const rendered = renderInvitationEmail({
    accountName: 'Acme Research',
    role: 'member',
    email,
    token,
    acceptUrl: `https://ads.example.test/v1/invitations/accept?token=${token}`,
    expiresAt: '2030-01-08T10:00:00.000Z',
  });
  return { token, msg: { to: email, ...rendered } };
}

describe('mailer over SMTP', () => {
  let smtp: TestSmtpServer;
  before(async () => {
    smtp = await startSmtpServer();
  });
  after(async () => {
    await smtp.close();
  });

  test('delivers a multipart message the server receives intact', async () => {
    const mailer = createMailer({ smtpUrl: smtp.url, outboxDir: '/nonexistent', from: FROM });
    const { token, msg } = invitation();
    const result = await mailer.send({ ...msg, headers: { 'X-ADS-Invitation': 'inv_1' } });
    await mailer.close();

    assert.equal(result.transport, 'smtp');
    assert.match(result.messageId, /^<.+@.+>$/);
    const [received] = await smtp.waitFor(1, 5_000);
    assert.ok(received);
    assert.equal(received.mailFrom, 'no-reply@ads.test');
    assert.deepEqual(received.rcptTo, ['new.member@example.test']);

    const parsed = parseMessage(received.raw);
    assert.equal(parsed.headers.get('subject'), "You're invited to Acme Research on Account Data Service");
    assert.equal(parsed.headers.get('from'), FROM);
    assert.equal(parsed.headers.get('to'), 'new.member@example.test');
    assert.equal(parsed.headers.get('message-id'), result.messageId);
    assert.equal(parsed.headers.get('x-ads-invitation'), 'inv_1');
    assert.match(parsed.headers.get('content-type') ?? '', /^multipart\/alternative/);

    const text = partOf(received.raw, 'text/plain');
    const html = partOf(received.raw, 'text/html');
    assert.ok(text.split(/\r?\n/).includes(token), 'token stands alone on a line of the text part');
    assert.ok(text.includes(`https://ads.example.test/v1/invitations/accept?token=${token}`));
    assert.ok(html.includes(`<code`) && html.includes(token));
  });

  test('logs in with percent-decoded credentials from the URL', async () => {
    const url = new URL(smtp.url);
    url.username = 'mailer';
    url.password = encodeURIComponent('p@ss:word/1');
    assert.deepEqual(parseSmtpUrl(url.href).auth, { user: 'mailer', pass: 'p@ss:word/1' });

    const seen = smtp.messages.length;
    const mailer = createMailer({ smtpUrl: url.href, outboxDir: '/nonexistent', from: FROM });
    await mailer.send(invitation('auth@example.test').msg);
    await mailer.close();
    const received = (await smtp.waitFor(seen + 1, 5_000))[seen];
    assert.equal(received?.user, 'mailer');
    assert.deepEqual(received?.rcptTo, ['auth@example.test']);
  });

  test('rejects while the server refuses and succeeds once it accepts again', async () => {
    const mailer = createMailer({ smtpUrl: smtp.url, outboxDir: '/nonexistent', from: FROM });
    const warnings: Record<string, unknown>[] = [];
    const logged = createMailer({
      smtpUrl: smtp.url,
      outboxDir: '/nonexistent',
      from: FROM,
      logger: { info: () => {}, warn: (obj) => warnings.push(obj) },
    });
    const { token, msg } = invitation('retry@example.test');
    const seen = smtp.messages.length;

    smtp.setReject(true);
    try {
      await assert.rejects(mailer.send(msg), (err: Error & { responseCode?: number }) => {
        assert.equal(err.responseCode, 451);
        return true;
      });
      await assert.rejects(logged.send(msg));
      assert.equal(warnings.length, 1);
      assert.equal(warnings[0]?.responseCode, 451);
      assert.ok(!JSON.stringify(warnings).includes(token), 'the token never reaches the log');
      assert.equal(smtp.messages.length, seen);
    } finally {
      smtp.setReject(false);
    }

    const result = await mailer.send(msg);
    assert.equal(result.transport, 'smtp');
    const received = (await smtp.waitFor(seen + 1, 5_000))[seen];
    assert.deepEqual(received?.rcptTo, ['retry@example.test']);
    assert.ok(partOf(received?.raw ?? '', 'text/plain').includes(token));
    await mailer.close();
    await logged.close();
  });
});

describe('mailer against a dead server', () => {
  test('rejects when nothing listens on the port', { timeout: 15_000 }, async () => {
    const gone = await startSmtpServer();
    await gone.close();
    const mailer = createMailer({ smtpUrl: gone.url, outboxDir: '/nonexistent', from: FROM });
    await assert.rejects(mailer.send(invitation().msg), (err: Error & { code?: string }) => {
      assert.equal(err.code, 'ESOCKET');
      assert.match(err.message, /ECONNREFUSED/);
      return true;
    });
    await mailer.close();
  });

  test('gives up on a server that accepts the connection but never greets', { timeout: 15_000 }, async () => {
    const sockets = new Set<Socket>();
    const silent = createServer((socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as AddressInfo;
    try {
      const mailer = createMailer({
        smtpUrl: `smtp://127.0.0.1:${port}`,
        outboxDir: '/nonexistent',
        from: FROM,
        timeoutMs: 300,
      });
      await assert.rejects(mailer.send(invitation().msg), (err: Error & { code?: string }) => {
        assert.equal(err.code, 'ETIMEDOUT');
        return true;
      });
      await mailer.close();
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  });
});

describe('mailer SMTP URL parsing', () => {
  test('reads smtps, default ports, tls_ca_file and require_tls', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ads-mail-ca-'));
    try {
      const ca = join(dir, 'ca.pem');
      await writeFile(ca, '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n');
      const parsed = parseSmtpUrl(`smtps://mail.example.test?tls_ca_file=${encodeURIComponent(ca)}`);
      assert.equal(parsed.secure, true);
      assert.equal(parsed.port, 465);
      assert.equal(parsed.host, 'mail.example.test');
      assert.equal(parsed.auth, undefined);
      assert.match(String(parsed.tls?.ca), /BEGIN CERTIFICATE/);

      const plain = parseSmtpUrl('smtp://mail.example.test:2525?require_tls=true');
      assert.equal(plain.secure, false);
      assert.equal(plain.port, 2525);
      assert.equal(plain.requireTLS, true);
      assert.equal(parseSmtpUrl('smtp://mail.example.test').port, 587);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('refuses bad URLs with a message naming the setting and hiding the password', () => {
    const cases = [
      'not a url',
      'http://mail.example.test',
      'smtp://u:secret@mail.example.test?tls.rejectUnauthorized=false',
      'smtp://mail.example.test?require_tls=yes',
      'smtp://mail.example.test?tls_ca_file=/nonexistent/ca.pem',
    ];
    for (const url of cases) {
      assert.throws(
        () => createMailer({ smtpUrl: url, outboxDir: '/nonexistent', from: FROM }),
        (err: Error) => {
          assert.match(err.message, /^ADS_SMTP_URL /);
          assert.ok(!err.message.includes('secret'));
          return true;
        },
        url,
      );
    }
  });
});

describe('mailer without SMTP', () => {
  test('writes one parseable .eml atomically into a new outbox directory', async () => {
    const root = await mkdtemp(join(tmpdir(), 'ads-outbox-'));
    try {
      const outboxDir = join(root, 'var', 'outbox');
      const mailer = createMailer({ outboxDir, from: FROM });
      const { token, msg } = invitation('file@example.test');
      const result = await mailer.send(msg);
      await mailer.close();
      assert.equal(result.transport, 'file');

      const entries = await readdir(outboxDir);
      assert.equal(entries.length, 1, `no temp files left: ${entries.join(', ')}`);
      const [name] = entries;
      assert.match(name ?? '', /^\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z-[A-Za-z0-9._@-]+\.eml$/);
      const path = join(outboxDir, name ?? '');
      assert.equal((await stat(path)).mode & 0o777, 0o600);

      const raw = await readFile(path, 'utf8');
      assert.ok(raw.includes('\r\n'), 'RFC 822 line endings');
      const parsed = parseMessage(raw);
      assert.equal(parsed.headers.get('from'), FROM);
      assert.equal(parsed.headers.get('to'), 'file@example.test');
      assert.equal(parsed.headers.get('subject'), "You're invited to Acme Research on Account Data Service");
      assert.equal(parsed.headers.get('message-id'), result.messageId);
      assert.ok(partOf(raw, 'text/plain').split(/\r?\n/).includes(token));
      assert.ok(partOf(raw, 'text/html').includes(token));

      await assert.rejects(mailer.send(msg), /closed/);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  test('keeps one file per message', async () => {
    const outboxDir = await mkdtemp(join(tmpdir(), 'ads-outbox-'));
    try {
      const mailer = createMailer({ outboxDir, from: FROM });
      const ids = new Set<string>();
      for (let i = 0; i < 3; i++)
        ids.add((await mailer.send(invitation(`m${i}@example.test`).msg)).messageId);
      await mailer.close();
      assert.equal(ids.size, 3);
      const entries = (await readdir(outboxDir)).sort();
      assert.equal(entries.length, 3);
      assert.ok(entries.every((e) => e.endsWith('.eml') && !e.startsWith('.')));
    } finally {
      await rm(outboxDir, { recursive: true, force: true });
    }
  });
});
