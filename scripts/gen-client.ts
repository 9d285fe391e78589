// `npm run client:gen`: regenerates clients/typescript/src/schema.d.ts from the OpenAPI document the
// service serves. `npm run client:check` (`--check`) regenerates into a temp file and fails when the
// committed types differ, so CI catches a route change nobody regenerated the client for.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import openapiTS, { astToString, COMMENT_HEADER } from 'openapi-typescript';
import { dumpOpenApi } from './dump-openapi.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const TARGET = path.join(ROOT, 'clients/typescript/src/schema.d.ts');

/** The generated types, formatted the way `biome check` wants them. */
async function generate(): Promise<string> {
  const doc = await dumpOpenApi();
  // The servers entry is the dump's placeholder instance; the types do not depend on it.
  const ast = await openapiTS(doc as never, { silent: true, alphabetize: false });
  const source = `${COMMENT_HEADER}${astToString(ast)}`;
  const biome = spawnSync(
    path.join(ROOT, 'node_modules/.bin/biome'),
    ['format', `--stdin-file-path=${path.relative(ROOT, TARGET)}`],
    { cwd: ROOT, input: source, encoding: 'utf8' },
  );
  if (biome.status !== 0) throw new Error(`biome format failed:\n${biome.stderr}`);
  return biome.stdout;
}

const types = await generate();
if (process.argv.includes('--check')) {
  const temp = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ads-client-')), 'schema.d.ts');
  fs.writeFileSync(temp, types);
  const committed = fs.existsSync(TARGET) ? fs.readFileSync(TARGET, 'utf8') : '';
  if (committed !== types) {
    const diff = spawnSync('diff', ['-u', TARGET, temp], { encoding: 'utf8' });
    process.stderr.write(`${(diff.stdout || '').split('\n').slice(0, 60).join('\n')}\n`);
    console.error(
      `clients/typescript/src/schema.d.ts is stale: run \`npm run client:gen\` and commit the result (fresh copy: ${temp}).`,
    );
    process.exit(1);
  }
  fs.rmSync(path.dirname(temp), { recursive: true, force: true });
  process.stdout.write('clients/typescript/src/schema.d.ts is up to date.\n');
} else {
  fs.mkdirSync(path.dirname(TARGET), { recursive: true });
  fs.writeFileSync(TARGET, types);
  process.stdout.write(`wrote ${path.relative(ROOT, TARGET)}\n`);
}
