import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { chromiumSkip, launchChromium } from '../helpers/chromium.ts';
import { type ServeProcess, startServe } from '../helpers/process.ts';

const APP = 'https://app.example.com';

/**
 * A page of another origin calling the API with fetch, as a browser enforces CORS: the page is
 * served by the browser itself (a routed origin), the API by a real `ads serve`.
 */
describe('a page of another origin calls the API in headless Chromium', { skip: chromiumSkip }, () => {
  let dataDir: string;
  let serve: ServeProcess;
  let browser: Browser;
  let key: string;
  before(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ads-cors-'));
    serve = await startServe({ ADS_DATA_DIR: dataDir, ADS_CORS_ORIGINS: APP });
    key = /Admin API key \(shown once, keep it safe\): (ads_\S+)/.exec(serve.stdout())?.[1] ?? '';
    // The page's origin is routed by the browser itself, so Chromium takes it for a public site;
    // its Local Network Access check (a prompt, in a desktop browser) is not what is tested here.
    browser = await launchChromium(['--disable-features=LocalNetworkAccessChecks']);
  });
  after(async () => {
    await browser?.close();
    await serve?.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  const pageAt = async (origin: string): Promise<Page> => {
    const context = await browser.newContext({ ignoreHTTPSErrors: true });
    await context.route(`${origin}/`, (route) =>
      route.fulfill({ status: 200, contentType: 'text/html', body: '<!doctype html><title>app</title>' }),
    );
    const page = await context.newPage();
    await page.goto(`${origin}/`);
    return page;
  };

  /** What the page's fetch gets: status, a body field and a readable header, or the error it threw. */
  const call = (page: Page, init: { method: string; body?: unknown; idempotencyKey?: string }) =>
    page.evaluate(
      async ({ url, key, init }) => {
        try {
          const headers: Record<string, string> = { authorization: `Bearer ${key}` };
          if (init.body !== undefined) headers['content-type'] = 'application/json';
          if (init.idempotencyKey) headers['idempotency-key'] = init.idempotencyKey;
          const res = await fetch(url, {
            method: init.method,
            headers,
            body: init.body === undefined ? undefined : JSON.stringify(init.body),
          });
          const body = (await res.json()) as { data?: { title?: string }; error?: { code?: string } };
          return {
            status: res.status,
            title: body?.data?.title ?? body?.error?.code,
            requestId: res.headers.get('x-request-id'),
            remaining: res.headers.get('x-ratelimit-remaining'),
          };
        } catch (err) {
          return { error: String(err) };
        }
      },
      { url: `${serve.url}/v1/data`, key, init },
    );

  it('an allowed origin creates and lists with a JSON body, a key and an Idempotency-Key', async () => {
    const page = await pageAt(APP);
    const created = await call(page, {
      method: 'POST',
      body: { title: 'from the browser', type: 'note' },
      idempotencyKey: 'browser-1',
    });
    assert.equal(created.status, 201, JSON.stringify(created));
    assert.equal(created.title, 'from the browser');
    assert.match(String(created.requestId), /^req_/, 'an exposed header is readable');
    const listed = await call(page, { method: 'GET' });
    assert.equal(listed.status, 200, JSON.stringify(listed));
    await page.context().close();
  });

  it('another origin is blocked by the browser', async () => {
    const page = await pageAt('https://other.example.net');
    const res = await call(page, { method: 'GET' });
    assert.match(String(res.error), /Failed to fetch/, JSON.stringify(res));
    await page.context().close();
  });
});
