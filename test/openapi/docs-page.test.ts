import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { chromiumSkip, launchChromium } from '../helpers/chromium.ts';
import { type ServeProcess, startServe } from '../helpers/process.ts';

describe('GET /docs in headless Chromium', { skip: chromiumSkip }, () => {
  let dataDir: string;
  let serve: ServeProcess;
  let browser: Browser;
  before(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ads-docs-'));
    serve = await startServe({ ADS_DATA_DIR: dataDir });
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await serve?.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('may not be framed by another site (the page takes an API key)', async () => {
    const context = await browser.newContext({ ignoreHTTPSErrors: true });
    try {
      for (const where of ['/docs', '/docs/static/index.html']) {
        const res = await context.request.get(`${serve.url}${where}`, { maxRedirects: 0 });
        assert.ok(res.status() === 200 || res.status() === 302, `${where}: ${res.status()}`);
        assert.equal(res.headers()['content-security-policy'], "frame-ancestors 'none'", where);
        assert.equal(res.headers()['x-frame-options'], 'DENY', where);
      }
    } finally {
      await context.close();
    }
  });

  it('renders the reference and lists every operation and webhook event of the document', async () => {
    const doc = (await serve.fetch('GET', '/v1/openapi.json')).body;
    const expected = Object.entries(doc.paths as Record<string, Record<string, unknown>>).flatMap(
      ([p, item]) => Object.keys(item).map((method) => `${method.toUpperCase()} ${p}`),
    );
    assert.ok(expected.length >= 25, `the document lists ${expected.length} operations`);
    // The OpenAPI 3.1 webhooks section is shown too, one block per event.
    expected.push(...Object.keys(doc.webhooks).map((event) => `POST ${event}`));

    const context = await browser.newContext({ ignoreHTTPSErrors: true });
    const page = await context.newPage();
    // Generous: on a slow, loaded machine (2026-11-25) rendering the page took over 30 s.
    page.setDefaultTimeout(120_000);
    page.setDefaultNavigationTimeout(120_000);
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(err.message));
    const response = await page.goto(`${serve.url}/docs`);
    assert.equal(response?.status(), 200);
    await page.locator('.opblock-summary-path').first().waitFor();
    await page.getByText('Account Data Service API').first().waitFor();

    const listed = await page.$$eval('.opblock', (blocks) =>
      blocks.map((b) => {
        const method = b.querySelector('.opblock-summary-method')?.textContent?.trim() ?? '';
        const where = b.querySelector('.opblock-summary-path')?.getAttribute('data-path') ?? '';
        return `${method.toUpperCase()} ${where}`;
      }),
    );
    const missing = expected.filter((op) => !listed.includes(op));
    assert.deepEqual(missing, [], `operations not shown on /docs (shown: ${listed.length})`);
    assert.deepEqual(errors, [], 'the page ran without script errors');
    await context.close();
  });
});
