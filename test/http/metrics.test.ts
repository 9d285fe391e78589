import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { before, describe, it } from 'node:test';
import { describeEachDatabase, type TestAccount } from '../helpers/harness.ts';

/** The value of one sample line `name{labels} value` in a Prometheus text exposition. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

// decisions §9: GET /metrics serves Prometheus metrics.
describeEachDatabase('GET /metrics', (h) => {
  let acc: TestAccount;
  before(async () => {
    acc = await h.account('enterprise');
  });

  it('serves the Prometheus text format without a key', async () => {
    const res = await h.request('GET', '/metrics');
    assert.equal(res.status, 200);
    assert.match(String(res.headers['content-type']), /^text\/plain; version=0\.0\.4/);
    assert.match(res.raw, /^# TYPE ads_http_requests_total counter$/m);
    assert.match(res.raw, /^# TYPE ads_http_request_duration_seconds histogram$/m);
    assert.match(res.raw, /^ads_process_resident_memory_bytes \d+/m);
    assert.equal(sample(res.raw, 'ads_rate_limiter_degraded'), 0);
  });

  it('counts requests by method, route template and status, never by id or account', async () => {
    const created = await h.request('POST', '/v1/data', {
      key: acc.adminKey,
      body: { title: 'Counted', type: 'note' },
    });
    const id = created.body.data.id as string;
    const series = 'ads_http_requests_total{method="GET",route="/v1/data/:id",status="200"}';
    const before = sample((await h.request('GET', '/metrics')).raw, series) ?? 0;
    for (let i = 0; i < 3; i++) await h.request('GET', `/v1/data/${id}`, { key: acc.adminKey });
    await h.request('GET', '/v1/nope');
    const text = (await h.request('GET', '/metrics')).raw;
    assert.equal(sample(text, series), before + 3);
    assert.ok(
      (sample(text, 'ads_http_requests_total{method="GET",route="unmatched",status="404"}') ?? 0) >= 1,
    );
    assert.ok(
      (sample(text, 'ads_http_request_duration_seconds_count{method="GET",route="/v1/data/:id"}') ?? 0) >= 3,
    );
    // Buckets go up to a webhook test ping's 10 s receiver timeout, not only +Inf above 5 s.
    assert.match(text, /^ads_http_request_duration_seconds_bucket\{[^}]*le="10"[,}]/m);
    for (const secret of [id, acc.id, acc.adminKey]) assert.ok(!text.includes(secret), secret);
  });

  it("reports the rate limiter's state at /readyz without failing readiness", async () => {
    const ready = await h.request('GET', '/readyz');
    assert.equal(ready.status, 200);
    assert.deepEqual(ready.body.checks, {
      database: true,
      rate_limiter: { backend: 'memory', degraded: false },
    });
  });
});

describe('process metrics', () => {
  it('count the CPU time spent before the first scrape (a fresh process)', () => {
    // In a process of its own: the series are set up once per process, when its first app is built.
    const script = `
      const { createHarness } = await import(${JSON.stringify(new URL('../helpers/harness.ts', import.meta.url).href)});
      const h = createHarness('sqlite');
      await h.setup();
      const end = process.cpuUsage().user + 300000;
      while (process.cpuUsage().user < end) {}
      const res = await h.app.inject({ method: 'GET', url: '/metrics' });
      process.stdout.write(res.body);
      await h.teardown();`;
    const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '--eval', script], {
      encoding: 'utf8',
      env: { ...process.env, NODE_ENV: 'test' },
    });
    assert.equal(child.status, 0, child.stderr);
    const cpu = sample(child.stdout, 'ads_process_cpu_user_seconds_total');
    assert.ok(cpu !== undefined && cpu >= 0.25, `user CPU counted: ${cpu}`);
  });
});
