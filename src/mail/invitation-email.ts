export interface InvitationEmailInput {
  accountName: string;
  role: 'member' | 'admin';
  email: string;
  token: string;
  /** Full link, built by the caller, ending `?token=<token>`. */
  acceptUrl: string;
  /** ISO 8601 expiry of the token. */
  expiresAt: string;
  /**
   * The link reaches the server's own generated, self-signed certificate (no ADS_TLS_CERT, no
   * ADS_PUBLIC_URL): the curl hint gets `-k`, as the README's commands have, or it would fail.
   */
  selfSigned?: boolean;
}

export interface RenderedEmail {
  subject: string;
  text: string;
  html: string;
}

const PRODUCT = 'Account Data Service';
const ACCEPT_PATH = '/v1/invitations/accept';

const HTML_ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** Escapes text for HTML element content and quoted attribute values. */
export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c] ?? c);
}

/** Renders the invitation email (decisions §4): token as text, acceptance link, expiry, curl hint. */
export function renderInvitationEmail(input: InvitationEmailInput): RenderedEmail {
  const link = new URL(input.acceptUrl);
  // The link lands in an href; only web schemes may get there.
  if (link.protocol !== 'https:' && link.protocol !== 'http:') {
    throw new Error('acceptUrl must be an http(s) URL');
  }
  // A hostile account name must not fold into extra lines of a one-line field.
  const account = oneLine(input.accountName);
  const roleLabel = input.role === 'admin' ? 'an admin' : 'a member';
  const expires = formatExpiry(input.expiresAt);
  const curl = curlCommand(
    apiEndpoint(link),
    input.token,
    input.selfSigned === true && link.protocol === 'https:',
  );

  const subject = `You're invited to ${account} on ${PRODUCT}`;

  // The token sits alone on its line so it can be copied without picking up surrounding words.
  const text = [
    'Hello,',
    '',
    `You have been invited to join the account "${account}" on ${PRODUCT} as ${roleLabel}.`,
    `The invitation was sent to ${oneLine(input.email)}.`,
    '',
    'Accept the invitation by opening this link:',
    '',
    input.acceptUrl,
    '',
    'Your one-time invitation token:',
    '',
    input.token,
    '',
    'Or accept it from a terminal:',
    '',
    curl,
    '',
    'Accepting activates your membership and returns your API key; it is shown only once, so keep it safe.',
    '',
    `This invitation expires on ${expires}. The token works once.`,
    '',
    'If you did not expect this invitation, you can ignore this email.',
    '',
  ].join('\n');

  const e = escapeHtml;
  const muted = 'color:#555555;font-size:13px;';
  const code =
    'font-family:Menlo,Consolas,monospace;font-size:14px;background:#f3f4f6;border:1px solid #e5e7eb;' +
    'border-radius:4px;padding:8px 10px;word-break:break-all;';
  const html = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${e(subject)}</title>
</head>
<body style="margin:0;padding:0;background:#f6f7f9;">
<div style="max-width:600px;margin:0 auto;padding:24px;font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;color:#111827;font-size:15px;line-height:1.5;">
<div style="background:#ffffff;border:1px solid #e5e7eb;border-radius:8px;padding:24px;">
<h1 style="font-size:20px;margin:0 0 16px;">You're invited to ${e(account)}</h1>
<p style="margin:0 0 16px;">You have been invited to join the account <strong>${e(account)}</strong> on ${e(PRODUCT)} as <strong>${e(roleLabel)}</strong>.
The invitation was sent to ${e(oneLine(input.email))}.</p>
<p style="margin:0 0 24px;"><a href="${e(input.acceptUrl)}" style="display:inline-block;background:#2563eb;color:#ffffff;text-decoration:none;padding:10px 18px;border-radius:6px;font-weight:600;">Accept invitation</a></p>
<p style="margin:0 0 8px;${muted}">Or open this link:</p>
<p style="margin:0 0 16px;word-break:break-all;"><a href="${e(input.acceptUrl)}" style="color:#2563eb;">${e(input.acceptUrl)}</a></p>
<p style="margin:0 0 8px;${muted}">Your one-time invitation token:</p>
<p style="margin:0 0 16px;"><code style="${code}">${e(input.token)}</code></p>
<p style="margin:0 0 8px;${muted}">Or accept it from a terminal:</p>
<pre style="margin:0 0 16px;white-space:pre-wrap;${code}">${e(curl)}</pre>
<p style="margin:0 0 16px;">Accepting activates your membership and returns your API key; it is shown only once, so keep it safe.</p>
<p style="margin:0;">This invitation expires on <strong>${e(expires)}</strong>. The token works once.</p>
</div>
<p style="margin:16px 0 0;${muted}">If you did not expect this invitation, you can ignore this email.</p>
</div>
</body>
</html>
`;

  return { subject, text, html };
}

/** Collapses control characters (CR/LF included) and runs of whitespace into single spaces. */
function oneLine(value: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: stripping control characters is the point
  return value.replace(/[\u0000-\u001f\u007f\s]+/g, ' ').trim();
}

/** `2025-01-08 10:00 UTC`; an unparsable value is shown as given rather than hidden. */
function formatExpiry(iso: string): string {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return oneLine(iso);
  return `${date.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

/**
 * The API endpoint for the curl hint. When the link already points at the endpoint (possibly
 * under a path prefix behind a proxy) it is reused; otherwise the endpoint is taken from the
 * link's origin.
 */
function apiEndpoint(link: URL): string {
  const base = new URL(link.href);
  base.search = '';
  base.hash = '';
  if (base.pathname.endsWith(ACCEPT_PATH)) return base.href;
  return new URL(ACCEPT_PATH, base.origin).href;
}

/**
 * A copy-paste-safe curl command: every argument is single-quoted for POSIX shells. `-k` (accept
 * a self-signed certificate) only where the server's own generated certificate answers.
 */
function curlCommand(endpoint: string, token: string, selfSigned: boolean): string {
  const body = JSON.stringify({ token });
  return `curl${selfSigned ? ' -k' : ''} -X POST ${shellQuote(endpoint)} \\\n  -H 'Content-Type: application/json' \\\n  -d ${shellQuote(body)}`;
}

function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}
