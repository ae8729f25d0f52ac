/**
 * CLI start-up: wall time of `harvest --help`, `harvest validate pipelines/demo.yaml` (text and
 * `--json`) and `harvest status` (on an empty database, Redis up), each run RUNS times through
 * `bin/harvest.js` as users run it, from the compiled `dist/` (built first, as `npm ci` does).
 * Baseline in the same run: `node -e ""`, Node's own start. Prints the median and the range of
 * each, and the median over the baseline's.
 *
 * Target (issue 14): `--help`, `validate` and `status` answer in <= 0.3 s.
 *
 * Run: `npx tsx test/bench/startup.bench.ts`. Knobs (env): RUNS (default 11).
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import {
  benchDir,
  benchEnv,
  benchPrefix,
  fixed,
  HARVEST_BIN,
  printBlock,
  runBench,
  verdict,
} from './lib.ts';

const RUNS = Number(process.env.RUNS ?? 11);
const TARGET_S = 0.3;
const ROOT = path.resolve(path.dirname(HARVEST_BIN), '..');

interface Timing {
  median: number;
  min: number;
  max: number;
}

/** Runs `node args` RUNS times; wall seconds. Throws when a run fails. */
function time(args: string[], env: NodeJS.ProcessEnv): Timing {
  const seconds: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const t0 = performance.now();
    const run = spawnSync(process.execPath, args, { cwd: ROOT, env, encoding: 'utf8' });
    seconds.push((performance.now() - t0) / 1000);
    if (run.status !== 0)
      throw new Error(`node ${args.join(' ')} exited ${run.status}: ${run.stderr.trim()}`);
  }
  seconds.sort((a, b) => a - b);
  return {
    median: seconds[Math.floor(seconds.length / 2)]!,
    min: seconds[0]!,
    max: seconds.at(-1)!,
  };
}

async function main(): Promise<void> {
  const build = spawnSync(process.execPath, [path.join(ROOT, 'bin/build.js')], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  if (build.status !== 0) throw new Error(`the build failed: ${build.stderr.trim()}`);
  const dir = benchDir('startup');
  const env = {
    ...process.env,
    ...benchEnv({ apiUrl: 'http://127.0.0.1:9', prefix: benchPrefix(), dir }),
  };
  const demo = path.join(ROOT, 'pipelines/demo.yaml');
  const baseline = time(['-e', ''], env);
  const cases: [string, string[]][] = [
    ['harvest --help', [HARVEST_BIN, '--help']],
    ['harvest validate demo.yaml', [HARVEST_BIN, 'validate', demo]],
    ['harvest validate --json', [HARVEST_BIN, 'validate', demo, '--json']],
    ['harvest status', [HARVEST_BIN, 'status']],
  ];
  const timings = cases.map(([label, args]) => [label, time(args, env)] as const);
  const ms = (s: number) => `${fixed(s * 1000, 0)} ms`;
  printBlock(`CLI start-up, ${RUNS} runs each`, [
    ['', 'median', 'min', 'max', '÷ node -e ""'],
    ['node -e "" (baseline)', ms(baseline.median), ms(baseline.min), ms(baseline.max), '1.00'],
    ...timings.map(
      ([label, t]) =>
        [label, ms(t.median), ms(t.min), ms(t.max), fixed(t.median / baseline.median, 2)] as const,
    ),
  ]);
  console.log('');
  for (const [label, t] of timings) {
    console.log(
      verdict(t.median <= TARGET_S, `${label}: median ${ms(t.median)} (<= ${TARGET_S * 1000} ms)`),
    );
  }
}

runBench(main);
