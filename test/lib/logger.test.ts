import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import {
  createLogger,
  LazyChildLogger,
  requestLineWriter,
  TurnBatchedDestination,
} from '../../src/lib/logger.ts';
import { createHarness } from '../helpers/harness.ts';

/** A logger as the service makes it, writing its lines into an array. */
function capture(level = 'info') {
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger(level, { write: (s: string) => lines.push(JSON.parse(s)) });
  return { logger, lines };
}

const withoutTime = ({ time, ...rest }: Record<string, unknown>) => {
  assert.match(String(time), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  return rest;
};

describe('request line', () => {
  const line = { requestId: 'req_1', method: 'GET', url: '/v1/data/:id', status: 200, ms: 3 };

  it('is the line logger.info would write, field for field and in the same order', () => {
    const { logger, lines } = capture();
    requestLineWriter(logger)(line);
    logger.info({ request_id: 'req_1', method: 'GET', url: '/v1/data/:id', status: 200, ms: 3 }, 'request');
    assert.equal(lines.length, 2);
    const [direct, viaPino] = lines.map(withoutTime);
    assert.deepEqual(direct, viaPino);
    assert.deepEqual(Object.keys(direct!), Object.keys(viaPino!));
    assert.deepEqual(direct, {
      level: 30,
      service: 'ads',
      request_id: 'req_1',
      method: 'GET',
      url: '/v1/data/:id',
      status: 200,
      ms: 3,
      msg: 'request',
    });
  });

  it('masks credentials in the path and every query value, and escapes what it quotes', () => {
    const { logger, lines } = capture();
    const write = requestLineWriter(logger);
    write({ ...line, url: '/v1/invitations/adsinv_AAAAAAAAAAAAAAAAAAAAAAAA/accept?token=x&flag' });
    write({ ...line, url: '/v1/nope/ads_BBBBBBBBBBBBBBBBBBBBBBBB?q=ads_CCCCCCCCCCCCCCCCCCCC' });
    write({ ...line, method: 'GET"\\', url: '/v1/"quoted"\n' });
    assert.equal(lines[0]!.url, '/v1/invitations/adsinv_[redacted]/accept?token=[redacted]&flag');
    assert.equal(lines[1]!.url, '/v1/nope/ads_[redacted]?q=[redacted]');
    assert.equal(lines[2]!.method, 'GET"\\');
    assert.equal(lines[2]!.url, '/v1/"quoted"\n');
    assert.ok(!JSON.stringify(lines).includes('BBBB') && !JSON.stringify(lines).includes('CCCC'));
  });

  it('masks credentials that are percent-encoded, or follow an escape such as Bearer%20', () => {
    const { logger, lines } = capture();
    const write = requestLineWriter(logger);
    const body = 'MF2Cq9Zq9Zq9Zq9Zq9Zq9Zq9Zq9Zq9Zq9Zq9Zq9Zq9Z';
    write({ ...line, url: `/v1/Bearer%20ads_${body}` });
    write({ ...line, url: `/v1/nope/ads%5F${body}` });
    write({ ...line, url: `/v1/nope/ads_${body.slice(0, 10)}%2D${body.slice(10)}` });
    write({ ...line, url: `/v1/x?ads%5F${body}` });
    // A credential sent as a query parameter's name, with a value, is masked too.
    write({ ...line, url: `/v1/x?ads_${body}=1&api_key&adsinv_${body}=&ads%5F${body}=x` });
    // Any letter of the prefix percent-encoded: the router decodes it to the same key.
    write({ ...line, url: `/v1/%61ds_${body}?%61%64%73%69n%76_${body}` });
    write({ ...line, url: `/v1/nope/A%44S%5F${body}` });
    assert.equal(lines[0]!.url, '/v1/Bearer%20ads_[redacted]');
    assert.equal(lines[1]!.url, '/v1/nope/ads_[redacted]');
    assert.equal(lines[5]!.url, '/v1/ads_[redacted]?adsinv_[redacted]');
    assert.equal(lines[6]!.url, '/v1/nope/ads_[redacted]');
    assert.equal(lines[2]!.url, '/v1/nope/ads_[redacted]');
    assert.equal(
      lines[4]!.url,
      '/v1/x?ads_[redacted]=[redacted]&api_key&adsinv_[redacted]=[redacted]&ads_[redacted]=[redacted]',
    );
    assert.ok(!JSON.stringify(lines).includes(body.slice(10, 30)), JSON.stringify(lines));
  });

  it('follows the level: nothing below warn, and a logger raised later stops writing', () => {
    const quiet = capture('warn');
    requestLineWriter(quiet.logger)(line);
    assert.equal(quiet.lines.length, 0);
    const loud = capture('info');
    const write = requestLineWriter(loud.logger);
    write(line);
    loud.logger.level = 'error';
    write(line);
    assert.equal(loud.lines.length, 1);
  });

  it("carries a child logger's bindings after the service's, as pino would", () => {
    const { logger, lines } = capture();
    const child = logger.child({ extra: 1 });
    requestLineWriter(child)(line);
    child.info({ request_id: 'req_1', method: 'GET', url: '/v1/data/:id', status: 200, ms: 3 }, 'request');
    const [direct, viaPino] = lines.map(withoutTime);
    assert.deepEqual(Object.entries(direct!), Object.entries(viaPino!));
    assert.equal(direct!.extra, 1);
    assert.equal(direct!.service, 'ads');
  });
});

describe('request logger (LazyChildLogger)', () => {
  it('makes no pino child until something logs, then binds the request id to every line', () => {
    const { logger, lines } = capture();
    let children = 0;
    const child = logger.child.bind(logger);
    logger.child = ((...args: Parameters<typeof child>) => {
      children++;
      return child(...args);
    }) as typeof logger.child;
    const log = new LazyChildLogger(logger, { request_id: 'req_2' }, {});
    log.debug('not at info');
    assert.equal(children, 0, 'a line below the level makes no child');
    log.error({ err: new Error('boom'), secret: 's3cr3t' }, 'unhandled error');
    log.info('second');
    assert.equal(children, 1, 'one child, made on the first line');
    assert.equal(lines.length, 2);
    assert.equal(lines[0]!.request_id, 'req_2');
    assert.equal(lines[0]!.level, 50);
    assert.equal(lines[0]!.secret, '[redacted]', "the service logger's redaction still applies");
    assert.equal((lines[0]!.err as { message: string }).message, 'boom');
    assert.equal(lines[1]!.request_id, 'req_2');
    assert.equal(lines[1]!.msg, 'second');
  });

  it('reports and changes its level, and makes grandchildren with both bindings', () => {
    const { logger, lines } = capture();
    const log = new LazyChildLogger(logger, { request_id: 'req_3' }, {});
    assert.equal(log.level, 'info');
    assert.equal(log.isLevelEnabled('debug'), false);
    log.level = 'debug';
    assert.equal(log.level, 'debug');
    assert.equal(logger.level, 'info', "the parent's level is left alone");
    log.debug('now on');
    log.child({ step: 'x' }).info('grandchild');
    assert.deepEqual(
      lines.map((l) => [l.msg, l.request_id, l.step]),
      [
        ['now on', 'req_3', undefined],
        ['grandchild', 'req_3', 'x'],
      ],
    );
    const raised = new LazyChildLogger(pino({ level: 'info' }), {}, { level: 'warn' });
    assert.equal(raised.level, 'warn');
    assert.equal(raised.isLevelEnabled('info'), false);
    // A route's own lower level (Fastify passes it as the child's level) opens lines the parent's shuts.
    const routeLevel = new LazyChildLogger(logger, { request_id: 'req_4' }, { level: 'debug' });
    assert.equal(routeLevel.isLevelEnabled('debug'), true);
    routeLevel.debug('route debug');
    assert.equal(lines.at(-1)?.msg, 'route debug');
    assert.equal(lines.at(-1)?.request_id, 'req_4');
  });
});

describe('request logging over HTTP', () => {
  const { logger, lines } = capture();
  const h = createHarness('sqlite', {}, { logger });
  before(() => h.setup());
  after(() => h.teardown());

  it('writes one request line per answer, with the request id the client was given', async () => {
    const acc = await h.account('enterprise');
    lines.length = 0;
    const ok = await h.request('GET', '/v1/data?limit=5', { key: acc.adminKey });
    const missing = await h.request('GET', '/v1/data/dat_01M86YF9B80TWZHWDTE4W8TE8V', { key: acc.adminKey });
    const unknownRoute = await h.request('GET', `/v1/nowhere/${acc.adminKey}?key=${acc.adminKey}`);
    assert.equal(ok.status, 200);
    assert.equal(missing.status, 404);
    assert.equal(unknownRoute.status, 404);
    const requests = lines.filter((l) => l.msg === 'request').map(withoutTime);
    const expected = (res: { headers: Record<string, unknown> }, url: string, status: number, i: number) => ({
      level: 30,
      service: 'ads',
      request_id: res.headers['x-request-id'],
      method: 'GET',
      url,
      status,
      ms: requests[i]?.ms,
      msg: 'request',
    });
    assert.deepEqual(requests, [
      expected(ok, '/v1/data', 200, 0),
      expected(missing, '/v1/data/:id', 404, 1),
      expected(unknownRoute, '/v1/nowhere/ads_[redacted]?key=[redacted]', 404, 2),
    ]);
    for (const r of requests) assert.ok(Number.isInteger(r.ms) && (r.ms as number) >= 0);
    assert.ok(!JSON.stringify(lines).includes(acc.adminKey.slice(4)), 'the key appears in no line');
  });
});

describe('stderr destination (TurnBatchedDestination)', () => {
  const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

  it("hands a turn's lines to its sink as one write, in order, when the turn ends", async () => {
    const writes: string[] = [];
    const destination = new TurnBatchedDestination({ write: (s: string) => writes.push(s) });
    destination.write('a\n');
    destination.write('b\n');
    destination.write('c\n');
    assert.deepEqual(writes, [], 'nothing is written before the turn ends');
    await turn();
    assert.deepEqual(writes, ['a\nb\nc\n']);
    destination.write('d\n');
    await turn();
    await turn();
    assert.deepEqual(
      writes,
      ['a\nb\nc\n', 'd\n'],
      'a later turn is a write of its own, and nothing is written twice',
    );
  });

  it('writes what is pending at once on flushSync and flush, and then nothing more', async () => {
    const writes: string[] = [];
    const destination = new TurnBatchedDestination({ write: (s: string) => writes.push(s) });
    destination.write('a\n');
    destination.flushSync();
    assert.deepEqual(writes, ['a\n']);
    destination.write('b\n');
    let called = false;
    destination.flush(() => {
      called = true;
    });
    assert.ok(called);
    assert.deepEqual(writes, ['a\n', 'b\n']);
    destination.flushSync();
    await turn();
    assert.deepEqual(writes, ['a\n', 'b\n']);
  });

  it('carries the logger: a line logged through pino arrives whole at the end of the turn', async () => {
    const writes: string[] = [];
    const logger = createLogger('info', new TurnBatchedDestination({ write: (s: string) => writes.push(s) }));
    logger.info({ n: 1 }, 'one');
    requestLineWriter(logger)({ requestId: 'req_1', method: 'GET', url: '/v1/data', status: 200, ms: 1 });
    await turn();
    assert.equal(writes.length, 1);
    const lines = writes[0]!
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l));
    assert.deepEqual(
      lines.map((l) => l.msg),
      ['one', 'request'],
    );
  });

  // The service's own stderr logger, in a process of its own: nothing pending is lost when the
  // process ends in the turn that logged it.
  const ending = {
    'process.exit()': 'process.exit(3);',
    'an uncaught exception': "throw new Error('boom');",
    'the event loop running out of work': '',
  };
  for (const [how, code] of Object.entries(ending)) {
    it(`writes the lines still pending when the process ends by ${how}`, () => {
      const script = [
        `import { createLogger } from ${JSON.stringify(new URL('../../src/lib/logger.ts', import.meta.url).href)};`,
        "const logger = createLogger('info');",
        "for (let i = 0; i < 3; i++) logger.info({ i }, 'pending');",
        code,
      ].join('\n');
      const run = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
        encoding: 'utf8',
        timeout: 60_000,
      });
      const lines = run.stderr
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l));
      assert.deepEqual(
        lines.map((l) => [l.msg, l.i]),
        [
          ['pending', 0],
          ['pending', 1],
          ['pending', 2],
        ],
        run.stderr,
      );
    });
  }
});
