import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Agent } from 'undici';
import { request } from 'undici';
import {
  createGuardedDispatcher,
  FORBIDDEN_ADDRESS_CODE,
  forbiddenAddressOf,
  isForbiddenAddress,
  type LookupAll,
  validateWebhookUrl,
} from '../../src/events/ssrf.ts';
import { type HttpsReceiver, startHttpsReceiver } from '../helpers/https-receiver.ts';

const refusedPrivate: Array<[string, string]> = [
  ['loopback', 'https://127.0.0.1/hook'],
  ['loopback, another address of 127/8', 'https://127.0.0.2/'],
  ['loopback, far end of 127/8', 'https://127.255.255.254:8443/'],
  ['IPv4-mapped loopback, not 127.0.0.1', 'https://[::ffff:127.0.0.2]/'],
  ['decimal IPv4', 'https://2130706433/'],
  ['octal IPv4', 'https://0177.0.0.1/'],
  ['hex IPv4', 'https://0x7f.1/'],
  ['hex single number', 'https://0x7f000001/'],
  ['short IPv4', 'https://127.1/'],
  ['trailing-dot IPv4', 'https://127.0.0.1./'],
  ['full-width digits', 'https://１２７.０.０.１/'],
  ['zero address', 'https://0/'],
  ['metadata', 'https://169.254.169.254/latest/meta-data/'],
  ['link-local', 'https://169.254.1.1/'],
  ['CGNAT', 'https://100.64.0.1/'],
  ['10/8', 'https://10.1.2.3/'],
  ['172.16/12 upper edge', 'https://172.31.255.255/'],
  ['192.168/16', 'https://192.168.1.1:8443/'],
  ['benchmarking', 'https://198.18.0.1/'],
  ['documentation', 'https://203.0.113.7/'],
  ['multicast', 'https://224.0.0.1/'],
  ['reserved', 'https://240.0.0.1/'],
  ['broadcast', 'https://255.255.255.255/'],
  ['IPv6 unspecified', 'https://[::]/'],
  ['IPv6 loopback', 'https://[::1]:8443/'],
  ['IPv4-mapped loopback', 'https://[::ffff:127.0.0.1]/'],
  ['IPv4-mapped hex metadata', 'https://[0:0:0:0:0:ffff:a9fe:a9fe]/'],
  ['IPv4-compatible', 'https://[::10.0.0.1]/'],
  ['NAT64 metadata', 'https://[64:ff9b::169.254.169.254]/'],
  ['NAT64 private hex', 'https://[64:ff9b::a00:1]/'],
  ['6to4 loopback', 'https://[2002:7f00:1::1]/'],
  ['6to4 private', 'https://[2002:c0a8:101::1]/'],
  ['IPv6 link-local', 'https://[fe80::1]/'],
  ['IPv6 unique local', 'https://[fd12:3456::1]/'],
  ['IPv6 multicast', 'https://[ff02::1]/'],
  ['IPv6 documentation', 'https://[2001:db8::1]/'],
  ['IPv6 discard', 'https://[100::1]/'],
  ['localhost', 'https://localhost/'],
  ['localhost upper case with port', 'https://LOCALHOST:8443/'],
  ['localhost trailing dot', 'https://localhost./'],
  ['sub.localhost', 'https://api.localhost/'],
  ['IDNA localhost', 'https://ⓛⓞⓒⓐⓛⓗⓞⓢⓣ/'],
];

const refusedAlways: Array<[string, string, RegExp]> = [
  ['http scheme', 'http://example.com/hook', /https/],
  ['ftp scheme', 'ftp://example.com/', /https/],
  ['user and password', 'https://user:pass@example.com/', /user info/],
  ['user only', 'https://token@example.com/', /user info/],
  ['too long', `https://example.com/${'a'.repeat(2100)}`, /2048/],
  ['grows past the limit when normalised', `https://example.com/${'é'.repeat(1000)}`, /2048/],
  ['relative', '/hooks/1', /absolute/],
  ['not a URL', 'not a url', /absolute/],
  ['empty', '', /required/],
  ['IPv6 zone id', 'https://[fe80::1%25eth0]/', /absolute/],
];

const accepted = [
  'https://example.com/hooks?x=1',
  'https://hooks.example.org:8443/path',
  'https://localhost.example.com/',
  'https://93.184.215.14/',
  'https://1.1.1.1/',
  'https://172.32.0.1/',
  'https://100.128.0.1/',
  'https://[2606:4700:4700::1111]/',
  'https://[::ffff:8.8.8.8]/',
  'https://[64:ff9b::8.8.8.8]/',
  'https://[2002:808:808::1]/',
  `https://example.com/${'a'.repeat(2048 - 'https://example.com/'.length)}`,
];

describe('isForbiddenAddress', () => {
  // Space-separated groups keep these long tables readable: IPv4 ranges and their edges, IPv6 forms,
  // embedded IPv4 (mapped, compatible, NAT64, 6to4), other special IPv6 space, unparsable input.
  const forbidden = [
    ...'0.0.0.0 0.255.255.255 10.0.0.0 100.64.0.0 100.127.255.255 127.0.0.1 169.254.169.254'.split(' '),
    ...'172.16.0.0 192.0.0.8 192.0.2.255 192.88.99.1 192.168.255.255 198.19.255.255 198.51.100.1'.split(' '),
    ...'239.255.255.250 255.255.255.255'.split(' '),
    ...':: ::1 [::1] 0:0:0:0:0:0:0:1 FE80::1 fe80::1%eth0 febf::1 fc00::1 ff00:: 2001:db8:ffff::1'.split(' '),
    ...'::ffff:10.0.0.1 ::ffff:0:8.8.8.8 ::8.8.8.8 64:ff9b::7f00:1 64:ff9b:1::8.8.8.8 2002:a00:1::'.split(
      ' ',
    ),
    ...'100:: 2001::1 5f00::1 3fff::1'.split(' '),
    ...['not-an-ip', '', '127.000.000.001'],
    // The whole of each range, not only its best-known address: loopback is 127.0.0.0/8, in every
    // IPv6 form that carries an IPv4 address; the documentation ranges end to end.
    ...'127.0.0.0 127.0.0.2 127.1.2.3 127.255.255.255 ::ffff:127.1.2.3 ::ffff:7f01:203'.split(' '),
    ...'64:ff9b::127.9.9.9 64:ff9b::7f09:909 2002:7f01:0203::1'.split(' '),
    ...'192.0.2.0 198.51.100.0 198.51.100.255 203.0.113.0 203.0.113.255'.split(' '),
  ];
  const allowed = [
    ...'8.8.8.8 1.0.0.1 100.63.255.255 100.128.0.0 172.15.255.255 172.32.0.0 192.0.1.1'.split(' '),
    ...'198.20.0.1 223.255.255.255'.split(' '),
    ...'2606:4700::1111 2a00:1450:4001:81b::200e 2001:200::1'.split(' '),
    ...'::ffff:8.8.8.8 64:ff9b::808:808 2002:808:808::'.split(' '),
  ];
  for (const ip of forbidden) {
    it(`refuses ${JSON.stringify(ip)}`, () => assert.equal(isForbiddenAddress(ip), true));
  }
  for (const ip of allowed) {
    it(`allows ${ip}`, () => assert.equal(isForbiddenAddress(ip), false));
  }
});

describe('validateWebhookUrl', () => {
  for (const [label, url] of refusedPrivate) {
    it(`refuses ${label}: ${url}`, () => {
      const result = validateWebhookUrl(url, { allowPrivate: false });
      assert.equal(result.ok, false);
      assert.match(result.ok ? '' : result.reason, /localhost|address/);
    });
    it(`accepts ${label} when private targets are allowed`, () => {
      const result = validateWebhookUrl(url, { allowPrivate: true });
      assert.equal(result.ok, true, result.ok ? '' : result.reason);
    });
  }

  for (const [label, url, reason] of refusedAlways) {
    it(`refuses ${label} even when private targets are allowed`, () => {
      for (const allowPrivate of [false, true]) {
        const result = validateWebhookUrl(url, { allowPrivate });
        assert.equal(result.ok, false);
        assert.match(result.ok ? '' : result.reason, reason);
      }
    });
  }

  for (const url of accepted) {
    it(`accepts ${url.slice(0, 60)}`, () => {
      const result = validateWebhookUrl(url, { allowPrivate: false });
      assert.equal(result.ok, true, result.ok ? '' : result.reason);
      assert.equal(result.ok && result.url.protocol, 'https:');
    });
  }

  it('returns the normalised URL', () => {
    const result = validateWebhookUrl('https://EXAMPLE.com:443/a/../b', { allowPrivate: false });
    assert.equal(result.ok && result.url.href, 'https://example.com/b');
  });
});

describe('forbiddenAddressOf (registration time)', () => {
  const answering =
    (addresses: string[]): LookupAll =>
    (_host, _opts, cb) =>
      setImmediate(() =>
        cb(
          null,
          addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })),
        ),
      );

  it('names the first forbidden address a host name resolves to, or null when all are public', async () => {
    assert.equal(
      await forbiddenAddressOf('hooks.example', answering(['93.184.215.14', '10.0.0.5'])),
      '10.0.0.5',
    );
    assert.equal(await forbiddenAddressOf('hooks.example', answering(['::1'])), '::1');
    assert.equal(await forbiddenAddressOf('hooks.example', answering(['93.184.215.14'])), null);
    assert.equal(await forbiddenAddressOf('[::1]', answering([])), '::1', 'a literal is not looked up');
  });

  it('lets a name through that fails to resolve, or does not answer in time', async () => {
    const failing: LookupAll = (_h, _o, cb) =>
      setImmediate(() => cb(Object.assign(new Error('nx'), { code: 'ENOTFOUND' }), []));
    assert.equal(await forbiddenAddressOf('nowhere.example', failing), null);
    // A lookup that never answers: given up after its 50 ms (a lookup left waiting would never
    // settle, and the guard would fail the test).
    const silent: LookupAll = () => {};
    const guard = new AbortController();
    const hung = sleep(30_000, undefined, { signal: guard.signal }).then(() => 'still waiting');
    try {
      assert.equal(await Promise.race([forbiddenAddressOf('slow.example', silent, 50), hung]), null);
    } finally {
      guard.abort();
      await hung.catch(() => {});
    }
  });
});

describe('createGuardedDispatcher (delivery time)', () => {
  let receiver: HttpsReceiver;
  const agents: Agent[] = [];
  const agent = (opts: Parameters<typeof createGuardedDispatcher>[0]): Agent => {
    const a = createGuardedDispatcher(opts);
    agents.push(a);
    return a;
  };
  const fixedLookup = (answers: Record<string, string[]>, calls: string[] = []): LookupAll => {
    return (hostname, _options, callback) => {
      calls.push(hostname);
      const addresses = answers[hostname];
      if (!addresses) {
        callback(Object.assign(new Error(`ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), []);
        return;
      }
      callback(
        null,
        addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })),
      );
    };
  };
  const post = (url: string, dispatcher: Agent) =>
    request(url, {
      dispatcher,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"event":"data.created"}',
      signal: AbortSignal.timeout(5000),
    });
  const forbidden = (pattern: RegExp) => (err: unknown) => {
    assert.ok(err instanceof Error);
    assert.equal((err as NodeJS.ErrnoException).code, FORBIDDEN_ADDRESS_CODE);
    assert.match(err.message, /forbidden/);
    assert.match(err.message, pattern);
    return true;
  };

  before(async () => {
    receiver = await startHttpsReceiver({ dnsNames: ['hooks.example.test'] });
  });
  after(async () => {
    await Promise.all(agents.map((a) => a.destroy()));
    await receiver.close();
  });

  it('refuses a name that rebinds to loopback, before any connection', async () => {
    const d = agent({
      allowPrivate: false,
      ca: receiver.ca,
      timeoutMs: 2000,
      lookup: fixedLookup({ 'rebind.example.test': ['127.0.0.1'] }),
    });
    const seen = receiver.requests.length;
    await assert.rejects(
      post(`https://rebind.example.test:${receiver.port}/hook`, d),
      // The name, not the address it resolved to (the delivery log would map internal names).
      forbidden(/^webhook target rebind\.example\.test resolves to a forbidden address/),
    );
    assert.equal(receiver.requests.length - seen, 0);
  });

  it('refuses a name whose answers mix public and private addresses', async () => {
    const lookup = fixedLookup({ 'mixed.example.test': ['93.184.215.14', '2606:4700::1111', '10.0.0.5'] });
    const d = agent({ allowPrivate: false, ca: receiver.ca, timeoutMs: 2000, lookup });
    const seen = receiver.requests.length;
    await assert.rejects(
      post(`https://mixed.example.test:${receiver.port}/hook`, d),
      forbidden(/^webhook target mixed\.example\.test resolves to a forbidden address/),
    );
    assert.equal(receiver.requests.length - seen, 0);
  });

  it('refuses IP-literal hosts without asking DNS', async () => {
    const calls: string[] = [];
    const d = agent({
      allowPrivate: false,
      ca: receiver.ca,
      timeoutMs: 2000,
      lookup: fixedLookup({}, calls),
    });
    const seen = receiver.requests.length;
    await assert.rejects(post(`https://127.0.0.1:${receiver.port}/hook`, d), forbidden(/127\.0\.0\.1/));
    await assert.rejects(
      post(`https://[::ffff:127.0.0.1]:${receiver.port}/hook`, d),
      forbidden(/::ffff:7f00:1/),
    );
    assert.deepEqual(calls, []);
    assert.equal(receiver.requests.length - seen, 0);
  });

  it('uses the system resolver by default and refuses localhost', async () => {
    const d = agent({ allowPrivate: false, ca: receiver.ca, timeoutMs: 2000 });
    const seen = receiver.requests.length;
    await assert.rejects(post(`${receiver.url}/hook`, d), forbidden(/localhost/));
    assert.equal(receiver.requests.length - seen, 0);
  });

  it('delivers to a private receiver when allowed, with TLS verified against the host name', async () => {
    const calls: string[] = [];
    const d = agent({
      allowPrivate: true,
      ca: receiver.ca,
      timeoutMs: 2000,
      lookup: fixedLookup({ localhost: ['127.0.0.1'] }, calls),
    });
    receiver.setHandler(() => ({ status: 202, body: 'accepted' }));
    const seen = receiver.requests.length;
    const res = await post(`${receiver.url}/hook`, d);
    assert.equal(res.statusCode, 202);
    assert.equal(await res.body.text(), 'accepted');
    const got = (await receiver.waitFor(seen + 1)).at(-1)!;
    assert.equal(got.method, 'POST');
    assert.equal(got.url, '/hook');
    assert.equal(got.headers['content-type'], 'application/json');
    assert.equal(got.headers.host, `localhost:${receiver.port}`);
    assert.equal(got.body, '{"event":"data.created"}');
    assert.deepEqual(calls, ['localhost']);
  });

  it('connects to the address it checked, without a second DNS lookup', async () => {
    // The system resolver cannot resolve this .test name, so success proves the checked address was used.
    const calls: string[] = [];
    const lookup = fixedLookup({ 'hooks.example.test': ['127.0.0.1'] }, calls);
    const d = agent({ allowPrivate: true, ca: receiver.ca, timeoutMs: 2000, lookup });
    receiver.setHandler(() => ({ status: 200 }));
    const res = await post(`https://hooks.example.test:${receiver.port}/checked`, d);
    await res.body.dump();
    assert.equal(res.statusCode, 200);
    assert.equal(receiver.requests.at(-1)!.headers.host, `hooks.example.test:${receiver.port}`);
    assert.deepEqual(calls, ['hooks.example.test']);
  });

  it('still verifies the certificate: an untrusted receiver fails', async () => {
    const d = agent({ allowPrivate: true, timeoutMs: 2000 });
    const seen = receiver.requests.length;
    await assert.rejects(post(`${receiver.url}/hook`, d), (err: NodeJS.ErrnoException) => {
      assert.match(String(err.code), /CERT|SELF_SIGNED/);
      return true;
    });
    assert.equal(receiver.requests.length - seen, 0);
  });

  it('checks the certificate against the original name, not the resolved address', async () => {
    // The certificate covers 127.0.0.1 but not this name, so the TLS handshake must fail.
    const lookup = fixedLookup({ 'other.example.test': ['127.0.0.1'] });
    const d = agent({ allowPrivate: true, ca: receiver.ca, timeoutMs: 2000, lookup });
    const seen = receiver.requests.length;
    await assert.rejects(
      post(`https://other.example.test:${receiver.port}/hook`, d),
      (err: NodeJS.ErrnoException) => {
        assert.equal(err.code, 'ERR_TLS_CERT_ALTNAME_INVALID');
        return true;
      },
    );
    assert.equal(receiver.requests.length - seen, 0);
  });

  it('tries the next checked address when one refuses the connection', async () => {
    const lookup = fixedLookup({ localhost: ['127.0.0.2', '127.0.0.1'] });
    const d = agent({ allowPrivate: true, ca: receiver.ca, timeoutMs: 2000, lookup });
    receiver.setHandler(() => ({ status: 204 }));
    const res = await post(`${receiver.url}/hook`, d);
    await res.body.dump();
    assert.equal(res.statusCode, 204);
  });

  it('does not follow redirects', async () => {
    const d = agent({ allowPrivate: true, ca: receiver.ca, timeoutMs: 2000 });
    receiver.setHandler((req) =>
      req.url === '/hook'
        ? { status: 302, headers: { location: `${receiver.url}/elsewhere` } }
        : { status: 200 },
    );
    const seen = receiver.requests.length;
    const res = await post(`${receiver.url}/hook`, d);
    await res.body.dump();
    assert.equal(res.statusCode, 302);
    assert.equal(receiver.requests.length - seen, 1);
    assert.equal(receiver.requests.at(-1)!.url, '/hook');
  });

  it('times out a receiver that does not answer', async () => {
    const d = agent({ allowPrivate: true, ca: receiver.ca, timeoutMs: 150 });
    receiver.setHandler(() => ({ status: 200, delayMs: 3000 }));
    await assert.rejects(post(`${receiver.url}/slow`, d), (err: NodeJS.ErrnoException) => {
      assert.equal(err.code, 'UND_ERR_HEADERS_TIMEOUT');
      return true;
    });
  });

  it('refuses plain http targets', async () => {
    const d = agent({ allowPrivate: true, timeoutMs: 2000 });
    await assert.rejects(post(`http://127.0.0.1:${receiver.port}/hook`, d), forbidden(/https only/));
  });
});
