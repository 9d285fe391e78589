import fs from 'node:fs';
import { type Browser, chromium } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

// In CI the browser is installed by .ci/run first and these tests must run; elsewhere it says how.
const installed = fs.existsSync(CHROMIUM);
if (!installed && process.env.CI === 'true') {
  throw new Error(`CI=true but ${CHROMIUM} is missing: run scripts/install-chromium.sh before the tests.`);
}

/** The `skip` option of a suite that drives headless Chromium: false when the browser is there. */
export const chromiumSkip = installed
  ? false
  : `${CHROMIUM} is missing: run scripts/install-chromium.sh (as root) to run this test`;

export function launchChromium(extraArgs: string[] = []): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: [...ARGS, ...extraArgs] });
}
