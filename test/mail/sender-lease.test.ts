import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, it } from 'node:test';
import { createMailer, type Mailer } from '../../src/mail/mailer.ts';
import { createMailSender } from '../../src/mail/sender.ts';
import { describeEachDatabase, type TestAccount } from '../helpers/harness.ts';
import { startSmtpServer, type TestSmtpServer } from '../helpers/smtp-server.ts';

const T0 = Date.UTC(2026, 10, 26, 9, 0, 0);

/** Waits until `check` holds, polling every 10 ms for up to 5 s. */
async function until(what: string, check: () => boolean) {
  const deadline = Date.now() + 5_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

// Two workers share the outbox. One works through a batch of slow sends; the other, polling after
// the lease the batch was claimed with has run out, must not take a message the first one is
// still going to send (or is sending): every invitation reaches the SMTP server exactly once.
describeEachDatabase('mail sender: leases shared by two workers', (h) => {
  let acc: TestAccount;
  let smtp: TestSmtpServer;
  before(async () => {
    acc = await h.account();
    smtp = await startSmtpServer();
  });
  after(async () => {
    h.clock.now = null;
    await smtp.close();
  });

  const real = () =>
    createMailer({
      smtpUrl: smtp.url,
      outboxDir: path.join(h.config.dataDir, 'outbox'),
      from: h.config.mailFrom,
      timeoutMs: 2000,
    });

  /**
   * The real SMTP mailer behind a gate: each send waits until the test lets it go (`gates`, in the
   * order the sends began), standing in for a slow SMTP server; openAll() lets every send through.
   */
  const gated = () => {
    const gates: Array<() => void> = [];
    let opened = false;
    const inner = real();
    const mailer: Mailer = {
      send: async (msg) => {
        if (!opened) await new Promise<void>((go) => gates.push(go));
        return inner.send(msg);
      },
      close: () => inner.close(),
    };
    const openAll = () => {
      opened = true;
      for (const go of gates) go();
    };
    return { mailer, gates, openAll };
  };

  /** Invites each address as a member, in order: one invitation mail each in the outbox. */
  const inviteAll = async (adminKey: string, emails: string[]) => {
    for (const email of emails) {
      const res = await h.request('POST', '/v1/users', { key: adminKey, body: { email, role: 'member' } });
      assert.equal(res.status, 201, res.raw);
    }
  };

  it('renews each message lease before sending it, and skips one another worker has taken', async () => {
    // Minutes are simulated with the harness clock.
    const { mailer: slow, gates, openAll } = gated();

    h.clock.now = T0;
    const emails = ['lease-1@example.com', 'lease-2@example.com', 'lease-3@example.com'];
    await inviteAll(acc.adminKey, emails);

    // Worker A claims all three at T0 (lease until T0 + 120 s) and starts the first send.
    const a = createMailSender(h.ctx, { mailer: slow, pollMs: 1_000_000_000 });
    await until('the first send', () => gates.length === 1);
    // The first send takes 100 s; the second starts at T0 + 100 s.
    h.clock.now = T0 + 100_000;
    gates[0]!();
    await until('the second send', () => gates.length === 2);

    // Worker B polls at T0 + 130 s, after the claim's lease ran out: it may take only the
    // third message, whose send has not started.
    h.clock.now = T0 + 130_000;
    const b = createMailSender(h.ctx, { mailer: real(), pollMs: 1_000_000_000 });
    await until('B sends the third', () => smtp.messages.length === 2);
    await b.stop();

    openAll();
    await a.stop();
    const received = smtp.messages.map((m) => m.rcptTo.join()).sort();
    assert.deepEqual(received, emails, 'each invitation sent exactly once');
    const rows = await h.database.db
      .selectFrom('mail_outbox')
      .select(['status'])
      .where('account_id', '=', acc.id)
      .execute();
    assert.deepEqual(
      rows.map((r) => r.status),
      ['sent', 'sent', 'sent'],
    );
  });

  // A send that outlives its lease: another worker takes the message over and sends it (mail is
  // at-least-once, so both may reach the server). Whatever the first worker's send then does, the
  // record keeps the outcome of the worker that holds the message: sent, with no error, no retry.
  it('a failure after another worker sent it leaves the message sent', async () => {
    // Worker A's mailer hangs until the test fails its send.
    let fail: ((err: Error) => void) | null = null;
    const hanging: Mailer = {
      send: () => new Promise((_, reject) => (fail = reject)),
      close: async () => {},
    };

    const other = await h.account();
    const before = smtp.messages.length;
    h.clock.now = T0;
    const res = await h.request('POST', '/v1/users', {
      key: other.adminKey,
      body: { email: 'outlived@example.com', role: 'member' },
    });
    assert.equal(res.status, 201, res.raw);
    const a = createMailSender(h.ctx, { mailer: hanging, pollMs: 1_000_000_000 });
    await until("A's send", () => fail !== null);

    // B polls after A's lease ran out, takes the message over and sends it.
    h.clock.now = T0 + 130_000;
    const b = createMailSender(h.ctx, { mailer: real(), pollMs: 1_000_000_000 });
    await until('B sends it', () => smtp.messages.length === before + 1);
    await b.stop();
    const sent = await h.database.db
      .selectFrom('mail_outbox')
      .selectAll()
      .where('account_id', '=', other.id)
      .executeTakeFirstOrThrow();
    assert.equal(sent.status, 'sent');

    // Then A's send fails.
    fail!(new Error('connection reset'));
    await a.stop();
    const row = await h.database.db
      .selectFrom('mail_outbox')
      .selectAll()
      .where('account_id', '=', other.id)
      .executeTakeFirstOrThrow();
    assert.deepEqual(
      { status: row.status, attempts: row.attempts, last_error: row.last_error, next: row.next_attempt_at },
      { status: 'sent', attempts: sent.attempts, last_error: null, next: sent.next_attempt_at },
    );
  });

  // decisions §9: SIGTERM finishes the work in flight, then exits. A stopping sender finishes the
  // message it is sending, gives the rest of its claimed batch back at once (not after the lease, so
  // another worker sends them now), and stop() does not wait for their slow sends.
  it('stop() finishes the send under way and gives the rest of the batch back for another worker', async () => {
    const { mailer: slow, gates, openAll } = gated();
    const third = await h.account();
    const before = smtp.messages.length;
    h.clock.now = T0;
    const emails = ['stop-1@example.com', 'stop-2@example.com', 'stop-3@example.com', 'stop-4@example.com'];
    await inviteAll(third.adminKey, emails);
    const a = createMailSender(h.ctx, { mailer: slow, pollMs: 1_000_000_000 });
    await until('the first send', () => gates.length === 1);
    let done = false;
    const stopped = a.stop().then(() => {
      done = true;
    });
    // Once the send under way is let go, stop() resolves with no other send begun.
    gates[0]!();
    await until('stop() or a second send', () => done || gates.length > 1);
    if (!done) {
      openAll();
      assert.fail('a send began after stop()');
    }
    await stopped;
    assert.equal(gates.length, 1, 'no send begun after stop()');
    assert.equal(smtp.messages.length, before + 1);
    const rows = await h.database.db
      .selectFrom('mail_outbox')
      .select(['status', 'locked_until'])
      .where('account_id', '=', third.id)
      .execute();
    assert.deepEqual(rows.map((r) => r.status).sort(), ['pending', 'pending', 'pending', 'sent']);
    assert.deepEqual(
      rows.filter((r) => r.status === 'pending').map((r) => r.locked_until),
      [null, null, null],
      'the unsent rest is released, not leased for 2 minutes',
    );
    // Another worker, at the same instant (no lease has run out), sends the rest.
    const b = createMailSender(h.ctx, { mailer: real(), pollMs: 1_000_000_000 });
    await until('B sends the rest', () => smtp.messages.length === before + 4);
    await b.stop();
    const received = smtp.messages
      .slice(before)
      .map((m) => m.rcptTo.join())
      .sort();
    assert.deepEqual(received, emails, 'each sent exactly once');
  });
});
