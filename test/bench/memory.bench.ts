/**
 * Memory of a large run: `harvest run <file> --wait` (the CLI) and one `harvest worker` as child
 * processes, against a zero-latency sandbox child, for N tasks (default 100,000). RSS of both
 * is sampled every 500 ms from /proc/<pid>/status (VmRSS), with progress read from the SQLite
 * database (read-only); the CLI's RSS is also read every 50 ms, as it rises and falls within a
 * second while the CLI starts the run (validate, plan into SQLite, enqueue). Targets: the CLI's
 * peak RSS < 250 MB; the worker's RSS flat, i.e. at 90% of the run no more than 1.25 times its
 * RSS at 10% (the baseline, in the same run).
 *
 * Run: `npx tsx test/bench/memory.bench.ts`
 * Knobs (env): N (tasks, default 100,000; needs two factors of similar size), CONCURRENCY
 * (worker, default 32).
 */
import { once } from 'node:events';
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { openStore, type Store } from '../../src/store/index.ts';
import {
  benchDir,
  benchEnv,
  benchPrefix,
  closer,
  fixed,
  forwardStderr,
  HARVEST_BIN,
  matrixPipeline,
  mb,
  printBlock,
  readRssKb,
  runBench,
  spawnNode,
  startSandboxChild,
  verdict,
  waitForOutput,
} from './lib.ts';

const N = Number(process.env.N ?? 100_000);
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 32);
const SAMPLE_MS = 500;
const CLI_SAMPLE_MS = 50;
const MAX_CLI_RSS_MB = 250;
const MAX_WORKER_GROWTH = 1.25;

interface Sample {
  atMs: number;
  cliKb: number | undefined;
  workerKb: number | undefined;
  /** Tasks ended (done + failed), as SQLite says; undefined before the run is readable. */
  ended: number | undefined;
}

async function main(): Promise<void> {
  console.log(
    `memory: ${N} tasks, \`harvest run --wait\` + \`harvest worker -c ${CONCURRENCY}\` as child processes, zero-latency sandbox`,
  );
  const sandbox = await startSandboxChild();
  const dir = benchDir('memory');
  const prefix = benchPrefix();
  const dbPath = path.join(dir, 'harvest.db');
  const file = path.join(dir, 'memory.yaml');
  writeFileSync(
    file,
    matrixPipeline({ name: 'bench-memory', count: N, concurrency: CONCURRENCY, maxAttempts: 10 }),
  );

  const worker = spawnNode(
    [HARVEST_BIN, 'worker', '--roles', 'search,store', '-c', String(CONCURRENCY)],
    { env: benchEnv({ apiUrl: sandbox.url, prefix, dir, logLevel: 'info' }), stdout: 'inherit' },
  );
  forwardStderr(worker, 'worker');
  await waitForOutput(worker, 'stderr', /worker started/);
  const workerIdleKb = readRssKb(worker.pid!);

  const t0 = performance.now();
  const cli = spawnNode([HARVEST_BIN, 'run', file, '--wait'], {
    env: benchEnv({ apiUrl: sandbox.url, prefix, dir, logLevel: 'warn' }),
    stdout: 'inherit',
  });
  forwardStderr(cli, 'run');
  const cliExit = once(cli, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  let runId: string | undefined;
  let startedAtMs = Number.NaN;
  void waitForOutput(cli, 'stderr', /^run (\S+): \d+ tasks/m, 600_000).then(
    (m) => {
      runId = m[1];
      startedAtMs = performance.now() - t0;
    },
    () => undefined,
  );

  // The CLI alone, often: the peaks of its sawtooth last a few hundred ms.
  let cliPeakFine = { kb: 0, atMs: 0 };
  const fine = setInterval(() => {
    const kb = readRssKb(cli.pid!);
    if (kb !== undefined && kb > cliPeakFine.kb) cliPeakFine = { kb, atMs: performance.now() - t0 };
  }, CLI_SAMPLE_MS);

  const samples: Sample[] = [];
  let store: Store | undefined;
  const closeStore = closer(() => store?.close());
  let cliRunning = true;
  void cliExit.then(() => {
    cliRunning = false;
  });
  while (cliRunning) {
    if (!store && runId && existsSync(dbPath)) store = openStore(dbPath, { readonly: true });
    let ended: number | undefined;
    if (store && runId) {
      const counts = store.tasks.counts(runId);
      ended = counts.done + counts.failed;
    }
    samples.push({
      atMs: performance.now() - t0,
      cliKb: readRssKb(cli.pid!),
      workerKb: readRssKb(worker.pid!),
      ended,
    });
    await Promise.race([sleep(SAMPLE_MS), cliExit]);
  }
  const [exitCode] = await cliExit;
  clearInterval(fine);
  const seconds = (performance.now() - t0) / 1000;
  const final = store && runId ? store.tasks.counts(runId) : undefined;
  await closeStore();

  const cliPeakKb = Math.max(...samples.map((s) => s.cliKb ?? 0));
  const cliPeak = samples.find((s) => s.cliKb === cliPeakKb);
  // While following (after startRun has enqueued everything), the CLI only reads SQLite.
  const following = samples.filter((s) => s.ended !== undefined);
  const cliFollowKb = following.length
    ? Math.max(...following.slice(Math.floor(following.length / 2)).map((s) => s.cliKb ?? 0))
    : undefined;
  const workerPeakKb = Math.max(...samples.map((s) => s.workerKb ?? 0));
  const at = (fraction: number) =>
    samples.find((s) => s.ended !== undefined && s.ended >= fraction * N)?.workerKb;
  const w10 = at(0.1);
  const w50 = at(0.5);
  const w90 = at(0.9);
  const growth = w10 && w90 ? w90 / w10 : Number.NaN;

  printBlock('memory', [
    ['run CLI exit code', String(exitCode)],
    ['tasks done / failed', final ? `${final.done} / ${final.failed}` : '-'],
    ['wall time', `${fixed(seconds, 1)} s (${fixed(N / seconds, 0)} tasks/s)`],
    ['samples', `${samples.length} every ${SAMPLE_MS} ms`],
    ['CLI peak RSS', `${mb(cliPeakFine.kb)} (${mb(cliPeakKb)} in the ${SAMPLE_MS} ms samples)`],
    [
      'CLI peak at',
      `${fixed(cliPeakFine.atMs / 1000, 1)} s (every task enqueued at ${fixed(startedAtMs / 1000, 1)} s)`,
    ],
    [
      `CLI peak at (${SAMPLE_MS} ms samples)`,
      cliPeak
        ? `${fixed(cliPeak.atMs / 1000, 1)} s (${cliPeak.ended === undefined ? 'starting the run' : `following, ${cliPeak.ended} ended`})`
        : '-',
    ],
    ['CLI RSS when following began', mb(following[0]?.cliKb)],
    ['CLI RSS following (2nd half, max)', mb(cliFollowKb)],
    ['worker RSS idle (before the run)', mb(workerIdleKb)],
    ['worker RSS at 10%', mb(w10)],
    ['worker RSS at 50%', mb(w50)],
    ['worker RSS at 90%', mb(w90)],
    ['worker peak RSS', mb(workerPeakKb)],
    ['worker RSS 90% / 10%', fixed(growth, 3)],
  ]);
  console.log('');
  console.log(
    verdict(
      cliPeakFine.kb / 1024 < MAX_CLI_RSS_MB,
      `CLI peak RSS ${mb(cliPeakFine.kb)} < ${MAX_CLI_RSS_MB} MB`,
    ),
  );
  console.log(
    verdict(
      growth <= MAX_WORKER_GROWTH,
      `worker RSS flat: at 90% ${fixed(growth, 3)}x its RSS at 10% (<= ${MAX_WORKER_GROWTH})`,
    ),
  );
  console.log(
    verdict(
      exitCode === 0 && final?.done === N,
      `every task done (${final?.done ?? 0} of ${N}), CLI exit code ${exitCode}`,
    ),
  );
}

runBench(main);
