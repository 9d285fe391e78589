#!/usr/bin/env node
// The `ads` command. Runs the start-up bundle that `npm install` builds (bin/bundle.mjs) when no
// project file it was built from changed since; otherwise the TypeScript sources through tsx, so
// an edit never runs stale code and there is no build step to forget. ADS_NO_BUNDLE=1 forces tsx.
import fs from 'node:fs';

const root = new URL('../', import.meta.url);
const cache = new URL('node_modules/.cache/ads/', root);

function bundleIsFresh() {
  if (process.env.ADS_NO_BUNDLE === '1') return false;
  try {
    const { builtAt, inputs, pinned } = JSON.parse(fs.readFileSync(new URL('manifest.json', cache), 'utf8'));
    for (const file of inputs) if (fs.statSync(new URL(file, root)).mtimeMs > builtAt) return false;
    for (const [file, mtimeMs] of Object.entries(pinned)) {
      if (fs.statSync(new URL(file, root)).mtimeMs !== mtimeMs) return false;
    }
    return fs.existsSync(new URL('ads.mjs', cache));
  } catch {
    return false;
  }
}

if (bundleIsFresh()) {
  await import(new URL('ads.mjs', cache).href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../src/cli/main.ts');
}
