#!/usr/bin/env node
// The `harvest` binary. It runs the compiled CLI in dist/ (built at install by `npm run build`,
// the `prepare` script) when that is there and not older than the sources; otherwise it loads
// the TypeScript sources through tsx, so an edited checkout runs as it is, only slower to start.
import { existsSync, readdirSync, statSync } from 'node:fs';
import module from 'node:module';
import { setFlagsFromString } from 'node:v8';

// Node 22.1+ keeps the compiled code of the modules loaded below on disk (NODE_COMPILE_CACHE, or
// the system's temp folder), so every later start is faster; Node 20 has no such cache and skips
// this. It never fails a start: where the folder cannot be written it stays off.
module.enableCompileCache?.();

// A process that only plans, enqueues and follows a run keeps little alive, but V8 sizes its
// heap for throughput and lets the garbage of enqueuing jobs pile up before collecting it.
// Sizing for memory instead lowers the peak at no measurable cost to such a process
// (test/bench/README.md). Processes that run workers keep the default: their speed matters
// (a store-only worker sizes for memory itself, once its threads run). So does
// `export`, which decides for itself: the flag also applies to every thread started after it
// is set, and makes its reader threads (JSONL, CSV) three times slower.
const [command, ...rest] = process.argv.slice(2);
const runsWorkers = ['worker', 'demo', 'sandbox'].includes(command) || rest.includes('--local');
if (!runsWorkers && command !== 'export') setFlagsFromString('--optimize-for-size');

const root = new URL('../', import.meta.url);
const stamp = new URL('dist/BUILT', root);

/** Newest modification time of a file under `dir`, in ms (0 when there is none). */
function newestUnder(dir) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const url = new URL(entry.name + (entry.isDirectory() ? '/' : ''), dir);
    const mtime = entry.isDirectory() ? newestUnder(url) : statSync(url).mtimeMs;
    if (mtime > newest) newest = mtime;
  }
  return newest;
}

function compiledIsCurrent() {
  if (!existsSync(stamp)) return false;
  const built = statSync(stamp).mtimeMs;
  return ['src/', 'jobs/'].every((dir) => {
    const url = new URL(dir, root);
    return !existsSync(url) || newestUnder(url) <= built;
  });
}

if (compiledIsCurrent()) {
  await import(new URL('dist/src/cli/main.js', root).href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../src/cli/main.ts');
}
