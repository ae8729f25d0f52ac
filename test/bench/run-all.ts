/**
 * Runs every test/bench/*.bench.ts one after another, each in its own `node --import tsx`
 * process, with their output passed through, then a one-line summary per benchmark.
 *
 * Run: `npm run bench` (all), `npm run bench -- goodput overhead` (those whose file name
 * contains one of the words; `npm run bench -- media` for media.bench.ts). Benchmarks exit 0
 * whatever their verdict; this exits 1 only when one of them broke (non-zero exit).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';

const BENCH_DIR = fileURLToPath(new URL('.', import.meta.url));
const ROOT = path.resolve(BENCH_DIR, '../..');

let current: ChildProcess | undefined;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    // The benchmark cleans up on the signal, then exits; this waits for it.
    current?.kill(signal);
    if (!current) process.exit(130);
  });
}

function runOne(file: string): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', file], {
      cwd: ROOT,
      stdio: 'inherit',
    });
    current = child;
    child.once('error', (error) => {
      console.error(error);
      resolve(1);
    });
    child.once('exit', (code, signal) => {
      current = undefined;
      resolve(code ?? (signal ? 128 : 1));
    });
  });
}

async function main(): Promise<number> {
  const words = process.argv.slice(2);
  const files = readdirSync(BENCH_DIR)
    .filter((f) => f.endsWith('.bench.ts'))
    .filter((f) => words.length === 0 || words.some((w) => f.includes(w)))
    .sort();
  if (files.length === 0) {
    console.error(`no benchmark matches ${words.join(', ')}`);
    return 1;
  }
  const summary: { file: string; code: number; seconds: number }[] = [];
  for (const file of files) {
    console.log(`\n######## ${file}\n`);
    const t0 = performance.now();
    const code = await runOne(path.join(BENCH_DIR, file));
    summary.push({ file, code, seconds: (performance.now() - t0) / 1000 });
  }
  console.log('\n######## summary');
  for (const s of summary) {
    console.log(
      `${s.file.padEnd(24)} ${s.code === 0 ? 'ran' : `broke (exit ${s.code})`}  ${s.seconds.toFixed(1)} s`,
    );
  }
  console.log('(verdicts are the PASS/FAIL lines above)');
  return summary.some((s) => s.code !== 0) ? 1 : 0;
}

main().then((code) => process.exit(code));
