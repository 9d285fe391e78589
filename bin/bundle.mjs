#!/usr/bin/env node
// Builds the start-up bundle bin/ads.js runs: src/cli/main.ts and its dependencies in one ES module
// (node_modules/.cache/ads/ads.mjs), so `ads serve` skips tsx's per-file resolution and transpiling.
// Run by `npm install` (the "prepare" script). Never fails the install: without a bundle, bin/ads.js
// runs the sources through tsx. Beside the bundle, a manifest lists the project files it was built
// from; bin/ads.js ignores a bundle older than any of them.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const outDir = path.join(root, 'node_modules/.cache/ads');
const outFile = path.join(outDir, 'ads.mjs');
const manifestFile = path.join(outDir, 'manifest.json');

// Native or file-reading packages stay in node_modules: better-sqlite3 (native), @fastify/swagger-ui
// (serves files from its own directory). @fastify/swagger is bundled: it reads only its own
// package.json for defaults this project sets, and loading it through require cost ~60 ms of
// start-up. The drivers of optional services (pg, ioredis) are loaded on first use through require
// (src/lib/optional-modules.ts), so they are not in the bundle at all.
const EXTERNAL = ['better-sqlite3', '@fastify/swagger-ui'];

try {
  // esbuild comes with tsx (a dependency); resolved from tsx, as tsx itself loads it.
  const esbuild = createRequire(import.meta.resolve('tsx'))('esbuild');
  const startedAt = Date.now();
  fs.mkdirSync(outDir, { recursive: true });
  const result = await esbuild.build({
    entryPoints: [path.join(root, 'src/cli/main.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    outfile: `${outFile}.tmp`,
    external: EXTERNAL,
    metafile: true,
    logLevel: 'warning',
    // Bundled CommonJS packages call require() for Node built-ins and the external packages.
    banner: {
      js: "import { createRequire as __adsRequire } from 'node:module'; const require = __adsRequire(import.meta.url);",
    },
  });
  const inputs = Object.keys(result.metafile.inputs)
    .map((f) => path.resolve(process.cwd(), f))
    .filter((f) => !f.includes(`${path.sep}node_modules${path.sep}`))
    .map((f) => path.relative(root, f));
  // Dependencies change only through npm, which rewrites this file on every install: the bundle
  // holds while it keeps the modification time it had at build time.
  const lock = 'node_modules/.package-lock.json';
  const pinned = {};
  if (fs.existsSync(path.join(root, lock))) pinned[lock] = fs.statSync(path.join(root, lock)).mtimeMs;
  fs.renameSync(`${outFile}.tmp`, outFile);
  fs.writeFileSync(manifestFile, JSON.stringify({ builtAt: startedAt, inputs, pinned }));
  process.stderr.write(`ads: start-up bundle built from ${inputs.length} project files\n`);
} catch (err) {
  fs.rmSync(manifestFile, { force: true });
  process.stderr.write(`ads: no start-up bundle (${err?.message ?? err}); bin/ads.js will use tsx\n`);
}
