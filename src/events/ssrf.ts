import type { LookupAddress } from 'node:dns';
import dns from 'node:dns';
import net from 'node:net';
import tls from 'node:tls';
import { Agent, buildConnector } from 'undici';
import { v4ToInt, v6ToHextets } from '../lib/ip.ts';

/** Longest webhook URL accepted at registration (decisions §7). */
export const MAX_WEBHOOK_URL_LENGTH = 2048;

/** Error code carried by the connection error when a delivery target address is refused. */
export const FORBIDDEN_ADDRESS_CODE = 'ERR_WEBHOOK_FORBIDDEN_ADDRESS';

/** Connection error raised by the guarded dispatcher when a target is not a public unicast address. */
export class ForbiddenAddressError extends Error {
  readonly code = FORBIDDEN_ADDRESS_CODE;
  override readonly name = 'ForbiddenAddressError';
}

// IPv4 ranges that are not public unicast (IANA special-purpose registry plus multicast/reserved).
const V4_FORBIDDEN: ReadonlyArray<readonly [number, number]> = (
  [
    ['0.0.0.0', 8],
    ['10.0.0.0', 8],
    ['100.64.0.0', 10],
    ['127.0.0.0', 8],
    ['169.254.0.0', 16],
    ['172.16.0.0', 12],
    ['192.0.0.0', 24],
    ['192.0.2.0', 24],
    ['192.88.99.0', 24],
    ['192.168.0.0', 16],
    ['198.18.0.0', 15],
    ['198.51.100.0', 24],
    ['203.0.113.0', 24],
    ['224.0.0.0', 4],
    ['240.0.0.0', 4], // includes 255.255.255.255
  ] as const
).map(([base, prefix]) => [v4ToInt(base), prefix] as const);

function isForbiddenV4(n: number): boolean {
  return V4_FORBIDDEN.some(([base, prefix]) => (n ^ base) >>> (32 - prefix) === 0);
}

function isForbiddenV6(h: number[]): boolean {
  const at = (i: number): number => h[i] ?? 0;
  const zerosUpTo = (end: number): boolean => h.slice(0, end).every((x) => x === 0);
  const lowV4 = ((at(6) << 16) | at(7)) >>> 0;
  if (zerosUpTo(5) && at(5) === 0xffff) return isForbiddenV4(lowV4); // ::ffff:a.b.c.d mapped
  if (zerosUpTo(6)) return true; // ::, ::1 and deprecated IPv4-compatible ::a.b.c.d
  if (at(0) === 0x64 && at(1) === 0xff9b && h.slice(2, 6).every((x) => x === 0)) {
    return isForbiddenV4(lowV4); // NAT64 well-known prefix reaches the embedded IPv4 address
  }
  if (at(0) === 0x2002) return isForbiddenV4(((at(1) << 16) | at(2)) >>> 0); // 6to4
  // Everything public lives in 2000::/3; outside it are fc00::/7, fe80::/10, ff00::/8, 100::/64,
  // 64:ff9b:1::/48, 5f00::/16 and IETF-reserved space.
  if ((at(0) & 0xe000) !== 0x2000) return true;
  if (at(0) === 0x2001 && at(1) < 0x0200) return true; // 2001::/23 IETF special purpose (Teredo, ORCHID…)
  if (at(0) === 0x2001 && at(1) === 0x0db8) return true; // documentation
  if (at(0) === 0x3fff && at(1) < 0x1000) return true; // 3fff::/20 documentation (RFC 9637)
  return false;
}

/** True for any address that is not public unicast; unparsable input is treated as forbidden. */
export function isForbiddenAddress(ip: string): boolean {
  let addr = ip.trim();
  if (addr.startsWith('[') && addr.endsWith(']')) addr = addr.slice(1, -1);
  const zone = addr.indexOf('%');
  if (zone !== -1) addr = addr.slice(0, zone);
  if (net.isIPv4(addr)) return isForbiddenV4(v4ToInt(addr));
  if (net.isIPv6(addr)) return isForbiddenV6(v6ToHextets(addr.toLowerCase()));
  return true;
}

/** Result of {@link validateWebhookUrl}: the normalised URL, or why it was refused. */
export type WebhookUrlCheck = { ok: true; url: URL } | { ok: false; reason: string };

function stripBrackets(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

/** Registration-time check of a webhook URL; `allowPrivate` lifts only the host/address checks. */
export function validateWebhookUrl(raw: string, opts: { allowPrivate: boolean }): WebhookUrlCheck {
  const fail = (reason: string): WebhookUrlCheck => ({ ok: false, reason });
  if (typeof raw !== 'string' || raw.length === 0) return fail('url is required');
  if (raw.length > MAX_WEBHOOK_URL_LENGTH) {
    return fail(`url must be at most ${MAX_WEBHOOK_URL_LENGTH} characters`);
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return fail('url must be an absolute URL');
  }
  // Normalisation (percent-encoding, IDNA) can lengthen the URL that would be stored and used.
  if (url.href.length > MAX_WEBHOOK_URL_LENGTH) {
    return fail(`url must be at most ${MAX_WEBHOOK_URL_LENGTH} characters`);
  }
  if (url.protocol !== 'https:') return fail('url must use https');
  if (url.username !== '' || url.password !== '') return fail('url must not contain user info');
  // Port 0 is no destination: a connection to it fails, or a client sends it to 443 instead.
  if (url.port === '0') return fail('url must not use port 0');
  if (opts.allowPrivate) return { ok: true, url };

  // WHATWG URL has already lowercased the host, applied IDNA mapping and turned decimal, octal,
  // hex and short IPv4 forms into dotted quads, so only canonical forms remain here.
  const host = url.hostname;
  const name = host.replace(/\.+$/, '');
  if (name === 'localhost' || name.endsWith('.localhost')) return fail('url host must not be localhost');
  const literal = stripBrackets(host);
  if (net.isIP(literal) !== 0 && isForbiddenAddress(literal)) {
    return fail('url host must not be a private, loopback, link-local, multicast or reserved address');
  }
  return { ok: true, url };
}

/** How long registration waits for a host name's addresses before it lets the name through. */
export const REGISTRATION_LOOKUP_MS = 1000;

/**
 * The first forbidden address a webhook host name resolves to now, or null: at registration the
 * name is resolved once (decisions §7), so a name that points inside the network is a `400` then
 * and not only a failed attempt later. A name that does not resolve (yet), or not within
 * `timeoutMs`, passes: every delivery resolves and checks it again, which is what keeps a name
 * pointed elsewhere later (DNS rebinding) from reaching anything.
 */
export async function forbiddenAddressOf(
  hostname: string,
  lookup: LookupAll = dns.lookup,
  timeoutMs = REGISTRATION_LOOKUP_MS,
): Promise<string | null> {
  const host = stripBrackets(hostname);
  if (net.isIP(host) !== 0) return isForbiddenAddress(host) ? host : null;
  try {
    const addresses = await lookupWithDeadline(lookup, host, timeoutMs);
    return addresses.find((a) => isForbiddenAddress(a)) ?? null;
  } catch {
    return null;
  }
}

/** The `dns.lookup` shape the dispatcher calls (`dns.lookup` itself fits). */
export type LookupAll = (
  hostname: string,
  options: { all: true },
  callback: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void;

/** Options for {@link createGuardedDispatcher}. */
export interface GuardedDispatcherOptions {
  allowPrivate: boolean;
  /** Extra trust anchor (test receivers); the bundled root store stays trusted. */
  ca?: string | Buffer;
  timeoutMs: number;
  lookup?: LookupAll;
}

// Quick, local failures worth trying the next checked address for (e.g. localhost -> ::1 then 127.0.0.1).
const NEXT_ADDRESS_CODES = new Set([
  'ECONNREFUSED',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EADDRNOTAVAIL',
  'EAFNOSUPPORT',
]);
const MAX_ADDRESS_ATTEMPTS = 3;

function lookupWithDeadline(lookup: LookupAll, hostname: string, timeoutMs: number): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`DNS lookup for ${hostname} timed out`)), timeoutMs);
    try {
      lookup(hostname, { all: true }, (err, addresses) => {
        clearTimeout(timer);
        if (err) reject(err);
        else if (addresses.length === 0) reject(new Error(`DNS lookup for ${hostname} returned no address`));
        else resolve(addresses.map((a) => a.address));
      });
    } catch (err) {
      clearTimeout(timer);
      reject(err);
    }
  });
}

/**
 * undici Agent for webhook deliveries: it resolves the host itself, refuses the connection if any
 * resolved address (or an IP-literal host) is forbidden, and connects to a checked address only,
 * keeping the host name as TLS servername so the certificate is verified against it.
 *
 * Call it as `undici.request(url, { dispatcher, method: 'POST', headers, body,
 * signal: AbortSignal.timeout(timeoutMs) })` and always consume or `dump()` the body. undici 7
 * `request` never follows redirects (a non-zero `maxRedirections` is rejected; following needs
 * the redirect interceptor, which must not be composed in), so a 3xx comes back as-is and counts
 * as a failure. Do not use `fetch` with it: fetch follows redirects unless `redirect: 'manual'`.
 * The per-phase timeouts below do not bound the total; the caller's AbortSignal does.
 */
export function createGuardedDispatcher(opts: GuardedDispatcherOptions): Agent {
  const lookup: LookupAll = opts.lookup ?? dns.lookup;
  const base = buildConnector({
    timeout: opts.timeoutMs,
    // One secure context for every connection: passing `ca` instead would parse the whole root
    // store again on each TLS connect.
    ...(opts.ca === undefined
      ? {}
      : { secureContext: tls.createSecureContext({ ca: [...tls.rootCertificates, opts.ca] }) }),
  });

  const refuse = (host: string, address: string): ForbiddenAddressError =>
    new ForbiddenAddressError(
      host === address
        ? `webhook target address ${address} is forbidden (not a public unicast address)`
        : // Not the address: the delivery log would map internal names to internal addresses.
          `webhook target ${host} resolves to a forbidden address (not a public unicast address)`,
    );

  const resolveChecked = async (hostname: string): Promise<string[]> => {
    if (net.isIP(hostname) !== 0) {
      if (!opts.allowPrivate && isForbiddenAddress(hostname)) throw refuse(hostname, hostname);
      return [hostname];
    }
    const addresses = await lookupWithDeadline(lookup, hostname, opts.timeoutMs);
    if (!opts.allowPrivate) {
      const bad = addresses.find((a) => isForbiddenAddress(a));
      if (bad !== undefined) throw refuse(hostname, bad);
    }
    return addresses;
  };

  const connect: buildConnector.connector = (options, callback) => {
    if (options.protocol !== 'https:') {
      callback(new ForbiddenAddressError('webhook target forbidden: deliveries use https only'), null);
      return;
    }
    const hostname = stripBrackets(options.hostname);
    // SNI and certificate checks use the original name; an IP literal is checked against IP SANs.
    const servername = net.isIP(hostname) === 0 ? hostname : undefined;
    resolveChecked(hostname).then(
      (addresses) => {
        const limit = Math.min(addresses.length, MAX_ADDRESS_ATTEMPTS);
        const attempt = (i: number): void => {
          // hostname = the checked IP, so net/tls connect performs no second DNS lookup.
          base({ ...options, hostname: addresses[i]!, servername }, (...args) => {
            const err = args[0] as NodeJS.ErrnoException | null;
            if (err && i + 1 < limit && NEXT_ADDRESS_CODES.has(err.code ?? '')) {
              attempt(i + 1);
              return;
            }
            callback(...args);
          });
        };
        attempt(0);
      },
      (err: unknown) => callback(err instanceof Error ? err : new Error(String(err)), null),
    );
  };

  return new Agent({ connect, headersTimeout: opts.timeoutMs, bodyTimeout: opts.timeoutMs });
}
