#!/usr/bin/env node
// `npm run build` (and `prepare`, at install): compiles src/ and jobs/ into dist/ with tsc, then
// writes dist/BUILT, which bin/harvest.js compares with the sources' times. Without TypeScript
// (`npm ci --omit=dev`), or when tsc fails, nothing is built and harvest runs from the sources
// through tsx: an install never fails for want of a build.
import { spawnSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../', import.meta.url));
const dist = new URL('../dist/', import.meta.url);

let tsc;
try {
  tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
} catch {
  console.error('harvest build: TypeScript is not installed; harvest runs from the sources (tsx)');
  process.exit(0);
}

rmSync(dist, { recursive: true, force: true });
const result = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], {
  cwd: root,
  stdio: 'inherit',
});
if (result.status !== 0) {
  rmSync(dist, { recursive: true, force: true });
  console.error('harvest build: tsc failed (see above); harvest runs from the sources (tsx)');
  process.exit(process.argv.includes('--strict') ? 1 : 0);
}
writeFileSync(new URL('BUILT', dist), `${new Date().toISOString()}\n`);
