import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, it } from 'node:test';
import { sql } from 'kysely';
import { secretBoxFor } from '../../src/lib/secrets.ts';
import { createMailer } from '../../src/mail/mailer.ts';
import { createMailSender } from '../../src/mail/sender.ts';
import { hashSecret } from '../../src/modules/api-keys/tokens.ts';
import { describeEachDatabase, type Harness, type TestAccount } from '../helpers/harness.ts';
import { liveInvitationToken } from '../helpers/invitations.ts';
import { partOf, startSmtpServer, type TestSmtpServer } from '../helpers/smtp-server.ts';

const tokenIn = (raw: string) => {
  const m = /adsinv_[A-Za-z0-9_-]{43}/.exec(partOf(raw, 'text/plain'));
  assert.ok(m, 'the text part carries the token');
  return m[0];
};

/** A mailer with the harness's settings that sends to the in-process SMTP server. */
const mailerFor = (h: Harness, smtp: TestSmtpServer) =>
  createMailer({
    smtpUrl: smtp.url,
    outboxDir: path.join(h.config.dataDir, 'outbox'),
    from: h.config.mailFrom,
    timeoutMs: 2000,
  });

describeEachDatabase('invitations: email over SMTP, acceptance, re-sending', (h) => {
  let acc: TestAccount;
  let smtp: TestSmtpServer;
  let sender: ReturnType<typeof createMailSender>;
  before(async () => {
    acc = await h.account();
    smtp = await startSmtpServer();
    const mailer = mailerFor(h, smtp);
    // A fast schedule so a refused send is retried within the test.
    sender = createMailSender(h.ctx, { mailer, pollMs: 50, backoffMs: 100, maxBackoffMs: 200 });
  });
  after(async () => {
    await sender.stop();
    await smtp.close();
  });

  const invite = async (email: string, role = 'member') => {
    const res = await h.request('POST', '/v1/users', { key: acc.adminKey, body: { email, role } });
    assert.equal(res.status, 201);
    return res.body.data as { id: string; created_at: string };
  };

  it('mails a multipart invitation naming account and role; the token in it is accepted once', async () => {
    const user = await invite('bob@example.com', 'admin');
    const [msg] = await smtp.waitFor(1, 5000);
    assert.ok(msg);
    assert.deepEqual(msg.rcptTo, ['bob@example.com']);
    const text = partOf(msg.raw, 'text/plain');
    const html = partOf(msg.raw, 'text/html');
    assert.match(text, /admin/);
    assert.match(html, /<html|<p|<div/i);
    const token = tokenIn(msg.raw);
    assert.ok(
      text.includes(`${h.config.publicUrl}/v1/invitations/accept?token=${token}`),
      'link from ADS_PUBLIC_URL',
    );
    // No ADS_TLS_CERT and no ADS_PUBLIC_URL: the server's own self-signed certificate answers, so
    // the curl hint has -k, as the README's commands do (without it curl refuses the certificate).
    assert.ok(text.includes(`curl -k -X POST '${h.config.publicUrl}/v1/invitations/accept'`), text);

    const accepted = await h.request('POST', '/v1/invitations/accept', { body: { token } });
    assert.equal(accepted.status, 200);
    assert.equal(accepted.body.data.user.id, user.id);
    assert.equal(accepted.body.data.user.status, 'active');
    assert.deepEqual(accepted.body.data.api_key.scopes, ['read', 'write', 'admin']);
    const key = accepted.body.data.api_key.key as string;
    assert.equal((await h.request('GET', '/v1/users', { key })).status, 200, 'the returned key works');

    const again = await h.request('POST', '/v1/invitations/accept', { body: { token } });
    assert.equal(again.status, 400);
    assert.equal(again.body.error.code, 'invalid_token');
  });

  it('stores tokens only as hashes and wipes the mail body once sent', async () => {
    await invite('carol@example.com');
    const msgs = await smtp.waitFor(2, 5000);
    const token = tokenIn(msgs[1]!.raw);
    const invitations = await h.database.db.selectFrom('invitations').selectAll().execute();
    assert.ok(invitations.every((i) => !JSON.stringify(i).includes(token)));
    const deadline = Date.now() + 5000;
    let sent = await h.database.db
      .selectFrom('mail_outbox')
      .selectAll()
      .where('to_address', '=', 'carol@example.com')
      .executeTakeFirst();
    while (sent?.status !== 'sent' && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 20));
      sent = await h.database.db
        .selectFrom('mail_outbox')
        .selectAll()
        .where('to_address', '=', 'carol@example.com')
        .executeTakeFirst();
    }
    assert.equal(sent?.status, 'sent');
    assert.equal(sent?.sealed_message, null);
  });

  it('refuses unknown, malformed and expired tokens with 400 invalid_token', async () => {
    for (const token of ['nope', `adsinv_${'A'.repeat(43)}`]) {
      const res = await h.request('POST', '/v1/invitations/accept', { body: { token } });
      assert.equal(res.status, 400);
      assert.equal(res.body.error.code, 'invalid_token');
    }
    h.clock.now = Date.now() - 8 * 24 * 3600 * 1000; // invited eight days ago
    await invite('late@example.com');
    h.clock.now = null;
    const msgs = await smtp.waitFor(3, 5000);
    const token = tokenIn(msgs[2]!.raw);
    const res = await h.request('POST', '/v1/invitations/accept', { body: { token } });
    assert.equal(res.status, 400);
    assert.equal(res.body.error.code, 'invalid_token');
  });

  it('refuses a body over 4 KB with 413 before reading it whole (no key needed to send one)', async () => {
    const res = await h.request('POST', '/v1/invitations/accept', {
      rawBody: JSON.stringify({ token: 'x'.repeat(5000) }),
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(res.status, 413);
    assert.equal(res.body.error.code, 'payload_too_large');
    // Just under the bound, it is read and answered as any bad token.
    const small = await h.request('POST', '/v1/invitations/accept', { body: { token: 'x'.repeat(4000) } });
    assert.equal(small.status, 400);
  });

  it('re-sends a fresh token; the old one stops working; an active user cannot be re-invited', async () => {
    const invitedAt = Date.now() - 2 * 24 * 3600 * 1000; // invited two days ago
    h.clock.now = invitedAt;
    const user = await invite('dave@example.com');
    h.clock.now = null;
    assert.equal(Date.parse(user.created_at), invitedAt);
    const first = tokenIn((await smtp.waitFor(4, 5000))[3]!.raw);
    const resend = await h.request('POST', `/v1/users/${user.id}/invitation`, { key: acc.adminKey });
    assert.equal(resend.status, 200);
    const second = tokenIn((await smtp.waitFor(5, 5000))[4]!.raw);
    assert.notEqual(first, second);
    assert.equal((await h.request('POST', '/v1/invitations/accept', { body: { token: first } })).status, 400);
    const joined = await h.request('POST', '/v1/invitations/accept', { body: { token: second } });
    assert.equal(joined.status, 200);
    // created_at is the invitation time while invited, the join time once active (spec, User).
    const joinedAt = joined.body.data.user.created_at as string;
    assert.ok(Date.parse(joinedAt) > invitedAt + 24 * 3600 * 1000, joinedAt);
    const listed = await h.request('GET', '/v1/users?limit=100', { key: acc.adminKey });
    const row = listed.body.data.users.find((u: { id: string }) => u.id === user.id);
    assert.equal(row.created_at, joinedAt);
    const again = await h.request('POST', `/v1/users/${user.id}/invitation`, { key: acc.adminKey });
    assert.equal(again.status, 400);
  });

  it('keeps the invitation through an SMTP outage and delivers it when the server recovers', async () => {
    smtp.setReject(true);
    const before = smtp.messages.length;
    await invite('erin@example.com');
    const deadline = Date.now() + 5000;
    let row = await h.database.db
      .selectFrom('mail_outbox')
      .selectAll()
      .where('to_address', '=', 'erin@example.com')
      .executeTakeFirst();
    while ((row?.attempts ?? 0) < 2 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 20));
      row = await h.database.db
        .selectFrom('mail_outbox')
        .selectAll()
        .where('to_address', '=', 'erin@example.com')
        .executeTakeFirst();
    }
    assert.ok((row?.attempts ?? 0) >= 2, 'retried while refused');
    assert.equal(row?.status, 'pending');
    assert.equal(smtp.messages.length, before);
    smtp.setReject(false);
    const msgs = await smtp.waitFor(before + 1, 5000);
    const token = tokenIn(msgs[before]!.raw);
    assert.equal((await h.request('POST', '/v1/invitations/accept', { body: { token } })).status, 200);
  });

  it('writes the invitation as an .eml file in the outbox folder when no SMTP server is configured', async () => {
    const fileSender = createMailSender(h.ctx, { pollMs: 50 });
    try {
      await sender.stop();
      await invite('frank@example.com');
      const dir = path.join(h.config.dataDir, 'outbox');
      const deadline = Date.now() + 5000;
      let files: string[] = [];
      while (Date.now() < deadline) {
        files = fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => f.endsWith('.eml')) : [];
        if (files.length) break;
        await new Promise((r) => setTimeout(r, 20));
      }
      assert.equal(files.length, 1);
      const raw = fs.readFileSync(path.join(dir, files[0]!), 'utf8');
      assert.match(raw, /frank@example.com/);
      tokenIn(raw);
    } finally {
      await fileSender.stop();
      sender = createMailSender(h.ctx, { pollMs: 50 });
    }
  });
});

describeEachDatabase('invitations: concurrent re-sends and accepts, withdrawn mail', (h) => {
  let acc: TestAccount;
  let smtp: TestSmtpServer;
  let sender: ReturnType<typeof createMailSender>;
  before(async () => {
    acc = await h.account();
    smtp = await startSmtpServer();
    const mailer = mailerFor(h, smtp);
    // Not started: each test sends what is due with tick(), so mail waits until it does.
    sender = createMailSender(h.ctx, { mailer });
  });
  after(async () => {
    await sender.stop();
    await smtp.close();
  });

  const invite = async (email: string) => {
    const res = await h.request('POST', '/v1/users', { key: acc.adminKey, body: { email, role: 'admin' } });
    assert.equal(res.status, 201);
    return res.body.data.id as string;
  };
  /** How many API keys the user holds. */
  const keysOf = async (userId: string) =>
    (await h.database.db.selectFrom('api_keys').select('id').where('user_id', '=', userId).execute()).length;
  /** A further working token of the user's, written as an invitation would be (known to the test). */
  const liveToken = (userId: string) => liveInvitationToken(h.database.db, acc.id, userId);
  const liveInvitations = async (userId: string) =>
    (
      await h.database.db
        .selectFrom('invitations')
        .select('id')
        .where('user_id', '=', userId)
        .where('used_at', 'is', null)
        .execute()
    ).length;
  const mailTo = (email: string) =>
    h.database.db
      .selectFrom('mail_outbox')
      .select(['status', 'sealed_message', 'last_error'])
      .where('to_address', '=', email)
      .orderBy('created_at')
      .execute();

  it('leaves exactly one working token after re-sends sent at the same moment', async () => {
    for (let round = 0; round < 3; round++) {
      const userId = await invite(`double-click-${round}@example.com`);
      const resends = await Promise.all(
        Array.from({ length: 6 }, () =>
          h.request('POST', `/v1/users/${userId}/invitation`, { key: acc.adminKey }),
        ),
      );
      assert.deepEqual(new Set(resends.map((r) => r.status)), new Set([200]));
      assert.equal(await liveInvitations(userId), 1, `round ${round}`);
    }
  });

  it('activates a user once, with one first key, when two of their tokens are accepted at once', async () => {
    const userId = await invite('two-tokens@example.com');
    // Two live tokens, as a re-send racing an accept could leave behind.
    const tokens = [await liveToken(userId), await liveToken(userId)];
    const accepted = await Promise.all(
      tokens.map((token) => h.request('POST', '/v1/invitations/accept', { body: { token } })),
    );
    assert.deepEqual(accepted.map((r) => r.status).sort(), [200, 400]);
    assert.equal(await keysOf(userId), 1);
  });

  it('replays an acceptance retried with its Idempotency-Key, its one-time key included, to the token only', async () => {
    const userId = await invite('lost-answer@example.com');
    const token = await liveToken(userId);
    const headers = { 'idempotency-key': 'accept-1' };
    const first = await h.request('POST', '/v1/invitations/accept', { body: { token }, headers });
    assert.equal(first.status, 200, first.raw);
    assert.equal(first.headers['idempotent-replayed'], undefined);
    // The client lost that answer and retries: the same answer, the same key, no second key.
    const again = await h.request('POST', '/v1/invitations/accept', { body: { token }, headers });
    assert.equal(again.status, 200, again.raw);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.equal(again.body.data.api_key.key, first.body.data.api_key.key);
    assert.equal(await keysOf(userId), 1);
    // The stored answer does not give the one-time key back to the database and the secret key
    // alone (decisions §3: stored only as a hash); it is sealed again under the token, held hashed.
    const box = secretBoxFor(h.config);
    const stored = await sql<{ sealed_response: string }>`SELECT sealed_response FROM idempotency_keys
      WHERE key = ${`invitation:${hashSecret(token)} accept-1`}`.execute(h.database.db);
    assert.equal(stored.rows.length, 1);
    assert.ok(!box.open(stored.rows[0]!.sealed_response).includes(first.body.data.api_key.key));
    // The same Idempotency-Key with another token (or none of the user's) replays nothing.
    const stranger = await h.request('POST', '/v1/invitations/accept', {
      body: { token: `adsinv_${'B'.repeat(43)}` },
      headers,
    });
    assert.equal(stranger.status, 400);
    assert.equal(stranger.body.error.code, 'invalid_token');
    assert.equal(stranger.headers['idempotent-replayed'], undefined);
    // Without the header the used token is refused, as before.
    const plain = await h.request('POST', '/v1/invitations/accept', { body: { token } });
    assert.equal(plain.status, 400);
    assert.equal(plain.body.error.code, 'invalid_token');
    // A refused acceptance is not stored: the key stays usable for a good token.
    const other = await liveToken(await invite('second-try@example.com'));
    const refused = await h.request('POST', '/v1/invitations/accept', {
      body: { token: `adsinv_${'C'.repeat(43)}` },
      headers: { 'idempotency-key': 'accept-2' },
    });
    assert.equal(refused.status, 400);
    const good = await h.request('POST', '/v1/invitations/accept', {
      body: { token: other },
      headers: { 'idempotency-key': 'accept-2' },
    });
    assert.equal(good.status, 200, good.raw);
    assert.equal(good.headers['idempotent-replayed'], undefined);
  });

  it('answers an accept and a re-send of one user at once without a 500 (no deadlock)', async () => {
    for (let round = 0; round < 10; round++) {
      const userId = await invite(`accept-vs-resend-${round}@example.com`);
      const token = await liveToken(userId);
      const [accepted, resent] = await Promise.all([
        h.request('POST', '/v1/invitations/accept', { body: { token } }),
        h.request('POST', `/v1/users/${userId}/invitation`, { key: acc.adminKey }),
      ]);
      // Either order is fine: accepted then too late to re-send, or re-sent then a dead token.
      const pair = `${accepted.status}/${resent.status}`;
      assert.ok(pair === '200/400' || pair === '400/200', `round ${round}: ${pair}`);
    }
    while ((await sender.tick()) > 0) {
      // send what these rounds queued, so the next test's tick sends its own mail
    }
  });

  it('never sends the invitation of a user removed while it waited, nor one a re-send replaced', async () => {
    const removedId = await invite('typo@example.com');
    assert.equal((await h.request('DELETE', `/v1/users/${removedId}`, { key: acc.adminKey })).status, 204);
    const replacedId = await invite('resent@example.com');
    assert.equal(
      (await h.request('POST', `/v1/users/${replacedId}/invitation`, { key: acc.adminKey })).status,
      200,
    );
    const before = smtp.messages.length;
    await sender.tick();
    const sent = smtp.messages.slice(before).flatMap((m) => m.rcptTo);
    assert.ok(!sent.includes('typo@example.com'), sent.join());
    assert.deepEqual(
      sent.filter((to) => to === 'resent@example.com'),
      ['resent@example.com'],
    );
    const [withdrawn] = await mailTo('typo@example.com');
    assert.equal(withdrawn?.status, 'failed');
    assert.equal(withdrawn?.sealed_message, null, 'the token it held is wiped');
    assert.match(withdrawn?.last_error ?? '', /cancelled: the user was removed/);
    const replaced = await mailTo('resent@example.com');
    assert.deepEqual(replaced.map((m) => m.status).sort(), ['failed', 'sent']);
    // The one that went out carries the token that works.
    const token = tokenIn(smtp.messages.at(-1)!.raw);
    assert.equal((await h.request('POST', '/v1/invitations/accept', { body: { token } })).status, 200);
  });
  it("the email's link opens a page whose button accepts; opening it alone uses nothing up", async () => {
    await invite('paula@example.com');
    await sender.tick();
    const mail = smtp.messages.find((m) => m.rcptTo.includes('paula@example.com'));
    assert.ok(mail);
    const token = tokenIn(mail.raw);
    const link = new URL(`${h.config.publicUrl}/v1/invitations/accept?token=${token}`);
    for (let i = 0; i < 2; i++) {
      // A mail scanner fetching the link twice.
      const page = await h.app.inject({ method: 'GET', url: link.pathname + link.search });
      assert.equal(page.statusCode, 200);
      assert.match(String(page.headers['content-type']), /^text\/html/);
      assert.match(String(page.headers['content-security-policy']), /default-src 'none'/);
      assert.equal(page.headers['referrer-policy'], 'no-referrer');
      assert.match(page.body, /<form method="post" action="accept">/);
      assert.ok(page.body.includes(`name="token" value="${token}"`));
    }
    const hostile = await h.app.inject({
      method: 'GET',
      url: '/v1/invitations/accept?token=%22%3E%3Cscript%3Ex',
    });
    assert.ok(!hostile.body.includes('<script>'), 'the token is escaped');
    // The button: a form post of the token alone.
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    const accepted = await h.app.inject({
      method: 'POST',
      url: '/v1/invitations/accept',
      payload: `token=${encodeURIComponent(token)}`,
      headers: form,
    });
    assert.equal(accepted.statusCode, 200, accepted.body);
    assert.match(String(accepted.headers['content-type']), /^text\/html/);
    const key = /<code[^>]*>(ads_[^<]+)<\/code>/.exec(accepted.body)?.[1];
    assert.ok(key, accepted.body);
    assert.equal((await h.request('GET', '/v1/users', { key })).status, 200, 'the key shown works');
    const again = await h.app.inject({
      method: 'POST',
      url: '/v1/invitations/accept',
      payload: `token=${encodeURIComponent(token)}`,
      headers: form,
    });
    assert.equal(again.statusCode, 400);
    assert.match(again.body, /unknown, already used or expired/);
    // Only these routes take a form; the API stays JSON.
    const other = await h.app.inject({
      method: 'POST',
      url: '/v1/users',
      payload: 'email=x@example.com&role=member',
      headers: { ...form, authorization: `Bearer ${acc.adminKey}` },
    });
    assert.equal(other.statusCode, 400);
    assert.equal(other.json().error.code, 'invalid_content_type');
  });

  it('answers a broken link or form with the page, and a JSON client with the envelope', async () => {
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    const broken = [
      await h.app.inject({ method: 'GET', url: `/v1/invitations/accept?token=${'a'.repeat(201)}` }),
      await h.app.inject({
        method: 'POST',
        url: '/v1/invitations/accept',
        payload: 'other=1',
        headers: form,
      }),
      await h.app.inject({
        method: 'POST',
        url: '/v1/invitations/accept',
        payload: `token=${'a'.repeat(5000)}`,
        headers: form,
      }),
    ];
    assert.deepEqual(
      broken.map((r) => r.statusCode),
      [400, 400, 413],
    );
    for (const page of broken) {
      assert.match(String(page.headers['content-type']), /^text\/html/);
      assert.match(String(page.headers['content-security-policy']), /default-src 'none'/);
      assert.match(String(page.headers['x-request-id']), /^req_/);
      assert.match(page.body, /<title>Invitation not accepted<\/title>/);
    }
    assert.match(broken[0]!.body, /link is not valid/);
    const json = await h.request('POST', '/v1/invitations/accept', { body: {} });
    assert.equal(json.status, 400);
    assert.equal(json.body.error.code, 'invalid_request');
  });
});

describeEachDatabase(
  'invitation page behind a proxy',
  (h) => {
    it('says that HTTPS is required, rather than blaming the link', async () => {
      const page = await h.app.inject({
        method: 'GET',
        url: '/v1/invitations/accept?token=abc',
        headers: { 'x-forwarded-proto': 'http' },
      });
      assert.equal(page.statusCode, 403);
      assert.match(String(page.headers['content-type']), /^text\/html/);
      assert.match(page.body, /HTTPS/);
      assert.doesNotMatch(page.body, /link is not valid/);
    });
  },
  { env: { ADS_TRUST_PROXY: 'true' } },
);
