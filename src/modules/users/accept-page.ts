import { escapeHtml as e } from '../../mail/invitation-email.ts';

/**
 * The page behind the invitation email's link when ADS_PUBLIC_URL points at the API itself (the
 * default). Opening the link changes nothing, so a mail scanner that fetches every link cannot use
 * up the token; the button posts the token (a form, no script) to `POST /v1/invitations/accept`,
 * which answers a form with the page below instead of JSON.
 */
export const PAGE_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  // Nothing loads from anywhere, forms post only here, and the token in the URL goes nowhere.
  'content-security-policy':
    "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
  'referrer-policy': 'no-referrer',
} as const;

const page = (title: string, body: string) => `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${e(title)}</title>
</head>
<body style="margin:0;background:#f6f7f9;font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;color:#111827;font-size:15px;line-height:1.5;">
<main style="max-width:560px;margin:40px auto;background:#fff;border:1px solid #e5e7eb;border-radius:8px;padding:24px;">
<h1 style="font-size:20px;margin:0 0 16px;">${e(title)}</h1>
${body}
</main>
</body>
</html>
`;

const code =
  'display:block;font-family:Menlo,Consolas,monospace;font-size:14px;background:#f3f4f6;border:1px solid #e5e7eb;border-radius:4px;padding:8px 10px;word-break:break-all;';

/** The confirmation page: one button that accepts. */
export function acceptPage(token: string, action: string): string {
  if (!token) {
    return page(
      'Accept an invitation',
      '<p>This link is missing its invitation token. Open the link from your invitation email again.</p>',
    );
  }
  return page(
    'Accept your invitation',
    `<p>Accepting activates your membership and shows your API key once.</p>
<form method="post" action="${e(action)}">
<input type="hidden" name="token" value="${e(token)}">
<button type="submit" style="background:#2563eb;color:#fff;border:0;border-radius:6px;padding:10px 18px;font-size:15px;font-weight:600;cursor:pointer;">Accept invitation</button>
</form>`,
  );
}

/** What a form acceptance shows: the key, once. */
export function acceptedPage(result: {
  user: { email: string; role: string };
  api_key: { key: string; scopes: string[] };
}): string {
  return page(
    'Invitation accepted',
    `<p>${e(result.user.email)} is now ${result.user.role === 'admin' ? 'an admin' : 'a member'}.</p>
<p>Your API key (scopes: ${e(result.api_key.scopes.join(', '))}). It is shown only this once, so copy it somewhere safe now:</p>
<code style="${code}">${e(result.api_key.key)}</code>
<p>Send it as <code>Authorization: Bearer &lt;key&gt;</code>.</p>`,
  );
}

/** What a form acceptance shows when the token was refused. */
export function refusedPage(message: string): string {
  return page(
    'Invitation not accepted',
    `<p>${e(message)}</p><p>Ask an admin of the account to send a new invitation.</p>`,
  );
}
