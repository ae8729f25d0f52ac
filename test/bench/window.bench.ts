/**
 * Runs larger than Redis: the same run of N tasks, enqueued whole (the baseline: the queue
 * window set to N) and through the queue window (HARVEST_QUEUE_WINDOW, default 10,000), each
 * as `harvest worker --roles search,store` (it hosts the feeder) plus `harvest run --wait` as
 * child processes, against a zero-latency sandbox child, each on a redis-server of its own
 * (started here, nothing on disk), so Redis's memory is the run's alone.
 *
 * Prints, per mode: Redis `used_memory` peak above idle (sampled every 100 ms, and the server's
 * own `used_memory_peak`), the largest number of search jobs in the queue, throughput (tasks
 * per second over the whole `run --wait`, planning included, and between 10% and 90% ended),
 * the `run` CLI's peak RSS, the worker's peak RSS, and the SQLite file size per task. Targets
 * (issue 13): windowed Redis peak <= 50 MB above idle; windowed throughput >= 0.95 x enqueue-all.
 *
 * Run: `npx tsx test/bench/window.bench.ts`
 * Knobs (env): N (tasks, default 100,000; needs two factors of similar size; the issue's
 * 1,000,000 takes about ten times as long), WINDOW (default: harvest's default), CONCURRENCY
 * (worker, default 32), ORDER (`windowed-first` to run the windowed mode first), ROUNDS (pairs
 * of runs, default 1; each pair in the other order than the last, and the throughput ratio's
 * median printed, of an even count the mean of the middle two: on a shared machine one pair
 * says little), MODES (`windowed` runs the windowed mode alone: the 1,000,000 tasks,
 * whose memory figures need no baseline; the throughput comparison is made at 100,000).
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Queue } from 'bullmq';
import { loadSettings } from '../../src/config.ts';
import { createRedis } from '../../src/queue/connection.ts';
import { QUEUES } from '../../src/queue/names.ts';
import { jobsInQueue } from '../../src/run/feed/state.ts';
import { openStore, type Store } from '../../src/store/index.ts';
import { freePort } from '../helpers/ports.ts';
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
  median,
  onCleanup,
  printBlock,
  readRssKb,
  runBench,
  SANDBOX_KEY,
  spawnNode,
  startSandboxChild,
  stopChild,
  verdict,
  waitForOutput,
} from './lib.ts';

const N = Number(process.env.N ?? 100_000);
const WINDOW = Number(process.env.WINDOW ?? loadSettings({}).queueWindow);
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 32);
const WINDOWED_FIRST = process.env.ORDER === 'windowed-first';
const ROUNDS = Number(process.env.ROUNDS ?? 1);
const WINDOWED_ONLY = process.env.MODES === 'windowed';
const SAMPLE_MS = 100;
const MAX_REDIS_ABOVE_IDLE_MB = 50;
const MIN_THROUGHPUT_RATIO = 0.95;

interface ModeResult {
  label: string;
  window: number;
  exitCode: number | null;
  done: number;
  seconds: number;
  /** Tasks per second between 10% and 90% ended. */
  midRate: number;
  redisIdleBytes: number;
  redisPeakBytes: number;
  redisServerPeakBytes: number;
  maxJobs: number;
  /** Fewest search jobs in Redis between 10% and 90% ended: near 0, the workers went hungry. */
  minJobsMid: number;
  cliPeakKb: number;
  workerPeakKb: number;
  dbBytes: number;
}

/** A redis-server of this mode's own on loopback, keeping nothing on disk. */
async function startRedis(dir: string): Promise<string> {
  const port = await freePort();
  const server = spawn(
    'redis-server',
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      dir,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  process.on('exit', () => server.kill('SIGKILL'));
  onCleanup(() => stopChild(server));
  await waitForOutput(server, 'stdout', /Ready to accept connections/);
  return `redis://127.0.0.1:${port}`;
}

async function usedMemory(
  redis: ReturnType<typeof createRedis>,
): Promise<{ used: number; peak: number }> {
  const info = await redis.info('memory');
  const field = (name: string) => Number(new RegExp(`^${name}:(\\d+)`, 'm').exec(info)?.[1] ?? 0);
  return { used: field('used_memory'), peak: field('used_memory_peak') };
}

async function runMode(label: string, window: number, sandboxUrl: string): Promise<ModeResult> {
  const dir = benchDir(`window-${label}`);
  const prefix = benchPrefix();
  const redisUrl = await startRedis(dir);
  const env = (logLevel: string) => ({
    ...benchEnv({ apiUrl: sandboxUrl, prefix, dir, logLevel }),
    REDIS_URL: redisUrl,
    HARVEST_QUEUE_WINDOW: String(window),
  });
  const dbPath = path.join(dir, 'harvest.db');
  const file = path.join(dir, 'window.yaml');
  writeFileSync(
    file,
    matrixPipeline({ name: `bench-window-${label}`, count: N, concurrency: CONCURRENCY }),
  );
  const redis = createRedis(redisUrl, 'client');
  const closeRedis = closer(() => redis.quit().then(() => undefined));
  const queue = new Queue(QUEUES.search, { connection: redis, prefix });
  const closeQueue = closer(() => queue.close());

  const worker = spawnNode(
    [HARVEST_BIN, 'worker', '--roles', 'search,store', '-c', String(CONCURRENCY)],
    { env: env('info'), stdout: 'inherit' },
  );
  forwardStderr(worker, `${label} worker`);
  await waitForOutput(worker, 'stderr', /worker started/);
  await sleep(500);
  const idle = await usedMemory(redis);

  const t0 = performance.now();
  const cli = spawnNode([HARVEST_BIN, 'run', file, '--wait'], {
    env: env('warn'),
    stdout: 'ignore',
  });
  forwardStderr(cli, `${label} run`);
  const cliExit = once(cli, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  let runId: string | undefined;
  void waitForOutput(cli, 'stderr', /^run (\S+): \d+ tasks/m, 600_000).then(
    (m) => {
      runId = m[1];
    },
    () => undefined,
  );
  let cliRunning = true;
  void cliExit.then(() => {
    cliRunning = false;
  });

  let store: Store | undefined;
  const closeStore = closer(() => store?.close());
  let redisPeak = idle.used;
  let maxJobs = 0;
  let minJobsMid = Number.POSITIVE_INFINITY;
  let cliPeakKb = 0;
  let workerPeakKb = 0;
  let at10: number | undefined;
  let at90: number | undefined;
  while (cliRunning) {
    const [mem, jobs] = await Promise.all([usedMemory(redis), jobsInQueue(queue)]);
    redisPeak = Math.max(redisPeak, mem.used);
    maxJobs = Math.max(maxJobs, jobs);
    cliPeakKb = Math.max(cliPeakKb, readRssKb(cli.pid!) ?? 0);
    workerPeakKb = Math.max(workerPeakKb, readRssKb(worker.pid!) ?? 0);
    if (!store && runId && existsSync(dbPath)) store = openStore(dbPath, { readonly: true });
    if (store && runId) {
      const c = store.tasks.counts(runId);
      const ended = c.done + c.failed;
      const now = performance.now();
      if (at10 === undefined && ended >= 0.1 * N) at10 = now;
      if (at90 === undefined && ended >= 0.9 * N) at90 = now;
      if (at10 !== undefined && at90 === undefined) minJobsMid = Math.min(minJobsMid, jobs);
    }
    await Promise.race([sleep(SAMPLE_MS), cliExit]);
  }
  const [exitCode] = await cliExit;
  const seconds = (performance.now() - t0) / 1000;
  const final = store && runId ? store.tasks.counts(runId) : undefined;
  const serverPeak = (await usedMemory(redis)).peak;
  await closeStore();
  await stopChild(worker);
  const dbBytes = ['', '-wal'].reduce(
    (sum, suffix) => sum + (existsSync(dbPath + suffix) ? statSync(dbPath + suffix).size : 0),
    0,
  );
  await closeQueue();
  await closeRedis();
  return {
    label,
    window,
    exitCode,
    done: final?.done ?? 0,
    seconds,
    midRate:
      at10 !== undefined && at90 !== undefined ? (0.8 * N * 1000) / (at90 - at10) : Number.NaN,
    redisIdleBytes: idle.used,
    redisPeakBytes: redisPeak,
    redisServerPeakBytes: serverPeak,
    maxJobs,
    minJobsMid,
    cliPeakKb,
    workerPeakKb,
    dbBytes,
  };
}

const MB = 1024 * 1024;

async function main(): Promise<void> {
  console.log(
    `window: ${N} tasks, enqueued whole vs through a window of ${WINDOW}; \`harvest worker -c ${CONCURRENCY}\` + \`harvest run --wait\`, zero-latency sandbox, a redis-server per mode`,
  );
  // The default key's million credits would run out at about 550,000 one-result searches.
  const sandbox = await startSandboxChild(['--keys', `${SANDBOX_KEY}:team-bench:1000000000`]);
  const modes: [string, number][] = WINDOWED_ONLY
    ? [['windowed', WINDOW]]
    : [
        ['enqueue-all', N],
        ['windowed', WINDOW],
      ];
  if (WINDOWED_FIRST) modes.reverse();
  const ratios: { whole: number; mid: number }[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    const results: ModeResult[] = [];
    for (const [label, window] of modes) {
      console.log(`\n-- round ${round}: ${label} (HARVEST_QUEUE_WINDOW=${window})`);
      results.push(await runMode(label, window, sandbox.url));
    }
    modes.reverse();
    ratios.push(report(results));
  }
  if (ROUNDS > 1) {
    const whole = median(ratios.map((r) => r.whole));
    const mid = median(ratios.map((r) => r.mid));
    printBlock('window: throughput, windowed / enqueue-all', [
      ['round', 'whole run', '10% to 90%'],
      ...ratios.map((r, i) => [String(i + 1), fixed(r.whole, 3), fixed(r.mid, 3)] as const),
      ['median', fixed(whole, 3), fixed(mid, 3)],
    ]);
    console.log('');
    console.log(
      verdict(
        whole >= MIN_THROUGHPUT_RATIO,
        `median windowed throughput ${fixed(whole, 3)} x enqueue-all (>= ${MIN_THROUGHPUT_RATIO})`,
      ),
    );
  }
}

/** One pair's figures and verdicts; returns its throughput ratios. */
function report(results: ModeResult[]): { whole: number; mid: number } {
  const all = results.find((r) => r.label === 'enqueue-all');
  const win = results.find((r) => r.label === 'windowed')!;
  const shown = all ? [all, win] : [win];
  const row = (name: string, f: (r: ModeResult) => string) => [name, ...shown.map(f)] as const;
  printBlock('window', [
    ['', ...shown.map((r) => r.label)],
    row('HARVEST_QUEUE_WINDOW', (r) => String(r.window)),
    row('run CLI exit code', (r) => String(r.exitCode)),
    row('tasks done', (r) => String(r.done)),
    row('wall time (run --wait)', (r) => `${fixed(r.seconds, 1)} s`),
    row('tasks/s (whole run)', (r) => fixed(N / r.seconds, 0)),
    row('tasks/s (10% to 90%)', (r) => fixed(r.midRate, 0)),
    row('search jobs in Redis, max', (r) => String(r.maxJobs)),
    row('search jobs in Redis, min 10%-90%', (r) => String(r.minJobsMid)),
    row('Redis used_memory idle', (r) => `${fixed(r.redisIdleBytes / MB, 1)} MB`),
    row(
      'Redis peak above idle (sampled)',
      (r) => `${fixed((r.redisPeakBytes - r.redisIdleBytes) / MB, 1)} MB`,
    ),
    row(
      'Redis used_memory_peak above idle',
      (r) => `${fixed((r.redisServerPeakBytes - r.redisIdleBytes) / MB, 1)} MB`,
    ),
    row(
      'Redis peak above idle per task',
      (r) => `${fixed((r.redisServerPeakBytes - r.redisIdleBytes) / N, 0)} B`,
    ),
    row('run CLI peak RSS', (r) => mb(r.cliPeakKb)),
    row('worker peak RSS', (r) => mb(r.workerPeakKb)),
    row('SQLite file (db + wal)', (r) => `${fixed(r.dbBytes / MB, 1)} MB`),
    row('SQLite bytes per task', (r) => fixed(r.dbBytes / N, 0)),
  ]);
  const peakAbove = (win.redisServerPeakBytes - win.redisIdleBytes) / MB;
  console.log('');
  console.log(
    verdict(
      peakAbove <= MAX_REDIS_ABOVE_IDLE_MB,
      `windowed Redis peak ${fixed(peakAbove, 1)} MB above idle (<= ${MAX_REDIS_ABOVE_IDLE_MB} MB)`,
    ),
  );
  if (!all) {
    console.log(
      verdict(win.done === N && win.exitCode === 0, `every task done (${win.done} of ${N})`),
    );
    return { whole: Number.NaN, mid: Number.NaN };
  }
  const ratio = all.seconds / win.seconds;
  const midRatio = win.midRate / all.midRate;
  console.log(
    verdict(
      ratio >= MIN_THROUGHPUT_RATIO,
      `windowed throughput ${fixed(ratio, 3)} x enqueue-all over the whole run (>= ${MIN_THROUGHPUT_RATIO}); ${fixed(midRatio, 3)} x from 10% to 90%`,
    ),
  );
  console.log(
    verdict(
      all.done === N && win.done === N && all.exitCode === 0 && win.exitCode === 0,
      `every task done in both modes (${all.done}, ${win.done} of ${N})`,
    ),
  );
  return { whole: ratio, mid: midRatio };
}

runBench(main);
