import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { InvitationEmailInput } from '../../src/mail/invitation-email.ts';
import { escapeHtml, renderInvitationEmail } from '../../src/mail/invitation-email.ts';

const TOKEN = 'q3Jx-7_Lm0pZ9vR2sT4uW6yA8bC1dE3fG5hJ7kM9nP0';

function input(overrides: Partial<InvitationEmailInput> = {}): InvitationEmailInput {
  return {
    accountName: 'Acme Research',
    role: 'member',
    email: 'new.member@example.test',
    token: TOKEN,
    acceptUrl: `https://ads.example.test/v1/invitations/accept?token=${TOKEN}`,
    expiresAt: '2030-01-08T10:00:00.000Z',
    ...overrides,
  };
}

describe('renderInvitationEmail', () => {
  test('names the account and product in the subject', () => {
    const { subject } = renderInvitationEmail(input());
    assert.equal(subject, "You're invited to Acme Research on Account Data Service");
  });

  test('text part holds account, role, token, link, expiry and a curl hint', () => {
    const { text } = renderInvitationEmail(input({ role: 'admin' }));
    const lines = text.split('\n');
    assert.match(text, /join the account "Acme Research" on Account Data Service as an admin\./);
    assert.ok(text.includes('new.member@example.test'));
    assert.ok(lines.includes(TOKEN), 'token alone on a line');
    assert.ok(lines.includes(`https://ads.example.test/v1/invitations/accept?token=${TOKEN}`));
    assert.match(text, /expires on 2030-01-08 10:00 UTC/);
    assert.ok(text.includes("curl -X POST 'https://ads.example.test/v1/invitations/accept'"));
    assert.ok(text.includes("-H 'Content-Type: application/json'"));
    assert.ok(text.includes(`-d '{"token":"${TOKEN}"}'`));
  });

  test("curl gets -k only for the server's own self-signed certificate over https", () => {
    const hint = (overrides: Partial<InvitationEmailInput>) =>
      renderInvitationEmail(input(overrides))
        .text.split('\n')
        .find((l) => l.startsWith('curl'));
    assert.equal(hint({}), "curl -X POST 'https://ads.example.test/v1/invitations/accept' \\");
    assert.equal(
      hint({ selfSigned: false }),
      "curl -X POST 'https://ads.example.test/v1/invitations/accept' \\",
    );
    assert.equal(
      hint({ selfSigned: true }),
      "curl -k -X POST 'https://ads.example.test/v1/invitations/accept' \\",
    );
    const plain = `http://ads.example.test/v1/invitations/accept?token=${TOKEN}`;
    assert.equal(
      hint({ selfSigned: true, acceptUrl: plain }),
      "curl -X POST 'http://ads.example.test/v1/invitations/accept' \\",
    );
    assert.ok(renderInvitationEmail(input({ selfSigned: true })).html.includes('curl -k -X POST'));
  });

  test('HTML part holds the same facts, with the link as an anchor', () => {
    const { html } = renderInvitationEmail(input());
    assert.ok(html.includes('<strong>Acme Research</strong>'));
    assert.ok(html.includes('<strong>a member</strong>'));
    assert.ok(html.includes(`<a href="https://ads.example.test/v1/invitations/accept?token=${TOKEN}"`));
    assert.match(html, new RegExp(`<code[^>]*>${TOKEN}</code>`));
    assert.ok(html.includes('2030-01-08 10:00 UTC'));
    assert.ok(html.includes('curl -X POST &#39;https://ads.example.test/v1/invitations/accept&#39;'));
    assert.ok(html.includes(`-d &#39;{&quot;token&quot;:&quot;${TOKEN}&quot;}&#39;`));
    assert.ok(!/<img\b/i.test(html), 'no images');
    assert.ok(!/\bsrc=|url\(/i.test(html), 'nothing loaded from outside');
  });

  test('escapes a hostile account name and every other interpolated value in HTML', () => {
    const hostile = '<b>x</b> & "quotes" \'single\' <script>alert(1)</script>';
    const { html, text, subject } = renderInvitationEmail(
      input({
        accountName: hostile,
        email: '"<img src=x>"@example.test',
        token: 'tok<en>',
        acceptUrl: 'https://ads.example.test/v1/invitations/accept?token=a"><script>',
      }),
    );
    assert.ok(html.includes('&lt;b&gt;x&lt;/b&gt; &amp; &quot;quotes&quot; &#39;single&#39;'));
    assert.ok(html.includes('&lt;script&gt;alert(1)&lt;/script&gt;'));
    assert.ok(!html.includes('<b>x</b>'));
    assert.ok(!html.includes('<script>'));
    assert.ok(!html.includes('<img'));
    assert.ok(html.includes('tok&lt;en&gt;'));
    assert.ok(
      html.includes('href="https://ads.example.test/v1/invitations/accept?token=a&quot;&gt;&lt;script&gt;"'),
    );
    // The plain-text part shows the name as written; there is nothing to interpret there.
    assert.ok(text.includes(hostile));
    assert.ok(subject.includes(hostile));
  });

  test('keeps line breaks in an account name out of the subject and text lines', () => {
    const { subject, text } = renderInvitationEmail(
      input({ accountName: 'Evil\r\nBcc: victim@example.test' }),
    );
    assert.equal(subject, "You're invited to Evil Bcc: victim@example.test on Account Data Service");
    assert.ok(!/\r|\n/.test(subject));
    assert.ok(!text.split('\n').some((line) => line.startsWith('Bcc:')));
  });

  test('shell-quotes the curl hint so a quote in the URL cannot break out', () => {
    const { text } = renderInvitationEmail(
      input({ acceptUrl: "https://ads.example.test/it's/v1/invitations/accept?token=x" }),
    );
    assert.ok(text.includes("curl -X POST 'https://ads.example.test/it'\\''s/v1/invitations/accept'"));
  });

  test('points curl at the API endpoint when the link goes elsewhere', () => {
    const { text } = renderInvitationEmail(
      input({ acceptUrl: `https://app.example.test/join?token=${TOKEN}` }),
    );
    assert.ok(text.includes("curl -X POST 'https://app.example.test/v1/invitations/accept'"));
    assert.ok(text.split('\n').includes(`https://app.example.test/join?token=${TOKEN}`));
  });

  test('refuses a link that is not http(s)', () => {
    assert.throws(() => renderInvitationEmail(input({ acceptUrl: 'javascript:alert(1)//?token=x' })), /http/);
  });

  test('shows an unparsable expiry as given', () => {
    const { text } = renderInvitationEmail(input({ expiresAt: 'soon' }));
    assert.match(text, /expires on soon\./);
  });
});

describe('escapeHtml', () => {
  test('escapes the five HTML-significant characters and nothing else', () => {
    assert.equal(escapeHtml(`<a href="x">&'</a> ok`), '&lt;a href=&quot;x&quot;&gt;&amp;&#39;&lt;/a&gt; ok');
  });
});
