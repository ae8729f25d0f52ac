/**
 * Runner overhead, measured where the work is: CPU time per search of harvest's own processes
 * (this process's main thread, its SQLite writer thread and other threads, and Redis) divided
 * by CPU time per job of bare BullMQ no-op jobs (added with addBulk, processed by BullMQ
 * workers laid out as harvest's search role lays them out: workers of SLOTS_PER_WORKER = 16
 * slots sharing the concurrency), on the same Redis in the same run. Target: <= 3.0 at every
 * concurrency tried.
 *
 * Why CPU and not end-to-end throughput: here the API twin (the sandbox, a child process)
 * shares the machine's cores with harvest and Redis, so harvest's searches per second are
 * mostly bounded by the sandbox's CPU, which a real deployment does not pay. The sandbox's CPU
 * per search is printed for information and left out of the ratio. The throughputs (harvest
 * from startRun to the run's completion, and from its first enqueue; BullMQ from the first add
 * to the last completion) are printed too, without a target.
 *
 * The split of harvest's CPU: the main thread (BullMQ, the API client, the journal, the group
 * commit), the writer thread (the threads that appeared when the pool started: the SQLite
 * writer), other threads (V8's garbage collector and compiler, libuv; BullMQ has them too) and
 * Redis. The machine may be shared: CPU time per unit is less sensitive to that than wall time,
 * but cache and scheduler contention still move it by some percent.
 *
 * Each concurrency is measured ROUNDS times (default 5) and judged on the median ratio of the
 * rounds. Each harvest run sits between two BullMQ runs, and its round's baseline is their mean:
 * this machine's speed drifts by a fifth within a minute (the same harvest run cost 435 and
 * 730 µs per search ten minutes apart), so a baseline taken only before the harvest run judged
 * the drift as much as harvest (one pair swung from 2.4 to 3.5 at c=64 in one afternoon). The
 * BullMQ runs are short, so bracketing costs little. Every round's ratio is printed.
 *
 * Run: `npx tsx test/bench/overhead.bench.ts`
 * Knobs (env): N (searches and jobs per case, default 20,000), CONCURRENCIES (default 64,256),
 * ROUNDS (default 5), OVERHEAD_FORMATS (scrape formats of each search, e.g.
 * `markdown,html,rawHtml,links`: content hashed, compressed and stored; default none),
 * OVERHEAD_LIMIT (results per search, default 1), OVERHEAD_CONTENT (the sandbox's `--content`:
 * `short`, the default, or `corpus`, real-sized pages),
 * REDIS_URL (default redis://127.0.0.1:6379; on a shared machine give it a redis-server of its
 * own, as Redis's CPU time counts every client's work).
 */
import { readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { startLocalPool } from '../../jobs/local.ts';
import { SLOTS_PER_WORKER, splitConcurrency } from '../../jobs/pool.ts';
import { createLogger } from '../../src/log.ts';
import { openRuntime } from '../../src/run/runtime.ts';
import { startRun } from '../../src/run/start.ts';
import { waitForRun } from '../../src/run/wait.ts';
import {
  benchDir,
  benchPrefix,
  benchSettings,
  closer,
  fixed,
  matrixPipeline,
  printBlock,
  REDIS_URL,
  type Row,
  readCpuMs,
  readRedisCpuMs,
  runBench,
  type SandboxChild,
  startSandboxChild,
  verdict,
} from './lib.ts';

const N = Number(process.env.N ?? 20_000);
const CONCURRENCIES = (process.env.CONCURRENCIES ?? '64,256')
  .split(',')
  .map((c) => Number(c.trim()))
  .filter((c) => c > 0);
const ROUNDS = Math.max(1, Number(process.env.ROUNDS ?? 5));
const FORMATS = (process.env.OVERHEAD_FORMATS ?? '').split(',').filter((f) => f.trim() !== '');
const LIMIT = Number(process.env.OVERHEAD_LIMIT ?? 1);
const CONTENT = process.env.OVERHEAD_CONTENT ?? 'short';
/** Target: harvest's CPU per search over BullMQ's CPU per no-op job, at most this. */
const MAX_CPU_RATIO = 3.0;
/** Jobs per addBulk call, as harvest's enqueue uses. */
const ADD_CHUNK = 1000;

/** CPU time per search or job, in µs, of the parts that share the machine. */
interface CpuSplit {
  /** This process's main thread (BullMQ, the API client, the journal, the group commit). */
  main: number;
  /** Threads that appeared when the pool started: the SQLite writer (none for BullMQ). */
  writer: number;
  /** The process's other threads: V8's garbage collector and compiler, libuv. */
  threads: number;
  redis: number;
  /** The API twin, left out of the ratio. */
  sandbox?: number;
}

interface BaselineCase {
  perSec: number;
  workers: number;
  cpu: CpuSplit;
}

interface HarvestCase {
  perSec: number;
  /** From the first enqueue to completion, the span the baseline measures. */
  fromEnqueuePerSec: number;
  done: number;
  failed: number;
  cpu: CpuSplit;
}

/** The process's own part: everything but the sandbox. */
const ownCpu = (cpu: CpuSplit) => cpu.main + cpu.writer + cpu.threads + cpu.redis;

/** CPU time of each live thread of this process, in ms, by thread id. */
function threadCpuMs(): Map<number, number> {
  const byTid = new Map<number, number>();
  for (const entry of readdirSync(`/proc/${process.pid}/task`)) {
    const tid = Number(entry);
    const ms = readCpuMs(process.pid, tid);
    if (ms !== undefined) byTid.set(tid, ms);
  }
  return byTid;
}

/**
 * Starts counting CPU time; the returned function gives each part's µs per unit of `count`.
 * `before` holds the threads that existed before the pool started: the others are its writer.
 */
async function cpuMeter(
  redis: Redis,
  options: { before?: ReadonlySet<number>; sandboxPid?: number | undefined } = {},
): Promise<(count: number) => Promise<CpuSplit>> {
  const self = process.cpuUsage();
  const threadsAtStart = threadCpuMs();
  const sandbox = options.sandboxPid === undefined ? undefined : readCpuMs(options.sandboxPid);
  const redisMs = await readRedisCpuMs(redis);
  return async (count) => {
    const used = process.cpuUsage(self);
    const threadsNow = threadCpuMs();
    const delta = (tid: number) => (threadsNow.get(tid) ?? 0) - (threadsAtStart.get(tid) ?? 0);
    const mainUs = delta(process.pid) * 1000;
    let writerUs = 0;
    if (options.before) {
      for (const tid of threadsNow.keys())
        if (!options.before.has(tid)) writerUs += delta(tid) * 1000;
    }
    const sandboxNow = options.sandboxPid === undefined ? undefined : readCpuMs(options.sandboxPid);
    return {
      main: mainUs / count,
      writer: writerUs / count,
      threads: Math.max(0, used.user + used.system - mainUs - writerUs) / count,
      redis: (((await readRedisCpuMs(redis)) - redisMs) * 1000) / count,
      sandbox:
        sandbox === undefined || sandboxNow === undefined
          ? undefined
          : ((sandboxNow - sandbox) * 1000) / count,
    };
  };
}

function formatCpu(cpu: CpuSplit): string {
  const parts = [`main thread ${fixed(cpu.main, 0)}`];
  if (cpu.writer > 0) parts.push(`writer thread ${fixed(cpu.writer, 0)}`);
  parts.push(`other threads ${fixed(cpu.threads, 0)}`, `Redis ${fixed(cpu.redis, 0)}`);
  const own = `${parts.join(' + ')} = ${fixed(ownCpu(cpu), 0)} µs`;
  return cpu.sandbox === undefined ? own : `${own} (+ sandbox ${fixed(cpu.sandbox, 0)} µs)`;
}

/**
 * Bare BullMQ: N no-op jobs through workers of SLOTS_PER_WORKER slots sharing `concurrency`,
 * as harvest's search role splits it; jobs per second from the first add to the last completion.
 */
async function bullmqBaseline(concurrency: number): Promise<BaselineCase> {
  const prefix = benchPrefix();
  const connection = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  const closeConnection = closer(() => void connection.disconnect());
  const queue = new Queue('noop', { connection, prefix });
  const closeQueue = closer(() => queue.close());
  let completed = 0;
  let resolveDone: () => void = () => {};
  const done = new Promise<void>((resolve) => {
    resolveDone = resolve;
  });
  const workers = splitConcurrency(concurrency, SLOTS_PER_WORKER).map(
    (slots) => new Worker('noop', async () => {}, { connection, prefix, concurrency: slots }),
  );
  const closeWorkers = closer(() => Promise.all(workers.map((w) => w.close())).then(() => {}));
  for (const worker of workers) {
    worker.on('completed', () => {
      completed += 1;
      if (completed === N) resolveDone();
    });
  }
  await Promise.all(workers.map((w) => w.waitUntilReady()));

  const meter = await cpuMeter(connection);
  const t0 = performance.now();
  for (let start = 0; start < N; start += ADD_CHUNK) {
    const chunk = Array.from({ length: Math.min(ADD_CHUNK, N - start) }, (_, i) => ({
      name: 'noop',
      data: { n: start + i },
      opts: { jobId: `noop.${start + i}`, removeOnComplete: true },
    }));
    await queue.addBulk(chunk);
  }
  await done;
  const seconds = (performance.now() - t0) / 1000;
  const cpu = await meter(N);

  await closeWorkers();
  await closeQueue();
  await closeConnection();
  return { perSec: N / seconds, workers: workers.length, cpu };
}

/** The baseline of a harvest run: the mean of the BullMQ runs before and after it. */
function meanBaseline(
  before: BaselineCase,
  after: BaselineCase,
): BaselineCase & { before: CpuSplit; after: CpuSplit } {
  const mean = (a: number, b: number) => (a + b) / 2;
  return {
    perSec: mean(before.perSec, after.perSec),
    workers: before.workers,
    cpu: {
      main: mean(before.cpu.main, after.cpu.main),
      writer: mean(before.cpu.writer, after.cpu.writer),
      threads: mean(before.cpu.threads, after.cpu.threads),
      redis: mean(before.cpu.redis, after.cpu.redis),
    },
    before: before.cpu,
    after: after.cpu,
  };
}

/** harvest: `count` plain searches; searches per second from startRun to the run's completion. */
async function harvestRun(
  sandbox: SandboxChild,
  concurrency: number,
  count = N,
): Promise<HarvestCase> {
  const dir = benchDir('overhead');
  const prefix = benchPrefix();
  const settings = benchSettings({ apiUrl: sandbox.url, prefix, dir });
  const logger = createLogger({ level: 'silent' });
  const file = path.join(dir, 'overhead.yaml');
  writeFileSync(
    file,
    matrixPipeline({ name: 'bench-overhead', count, concurrency, limit: LIMIT, formats: FORMATS }),
  );
  const runtime = await openRuntime(settings);
  const closeRuntime = closer(() => runtime.close());
  const before = new Set(threadCpuMs().keys());
  const pool = await startLocalPool(settings, {
    roles: ['search', 'store'],
    concurrency,
    store: runtime.store,
    logger,
  });
  const closePool = closer(() => pool.close());

  const meter = await cpuMeter(runtime.redis, { before, sandboxPid: sandbox.child.pid });
  const t0 = performance.now();
  const { runId } = await startRun(runtime, file, { logger });
  const final = await waitForRun(runtime, runId, { pollMs: 50 });
  const seconds = (performance.now() - t0) / 1000;
  const cpu = await meter(count);

  const run = runtime.store.runs.get(runId);
  const enqueuedMs = (run?.finishedAt ?? 0) - (run?.startedAt ?? 0);

  await closePool();
  await closeRuntime();
  return {
    perSec: final.done / seconds,
    fromEnqueuePerSec: enqueuedMs > 0 ? (final.done * 1000) / enqueuedMs : 0,
    done: final.done,
    failed: final.failed,
    cpu,
  };
}

async function main(): Promise<void> {
  console.log(
    `overhead: ${N} searches per case against a zero-latency sandbox (child process), ` +
      `vs ${N} bare BullMQ no-op jobs on workers of ${SLOTS_PER_WORKER} slots; ` +
      `concurrency ${CONCURRENCIES.join(', ')}`,
  );
  const sandbox = await startSandboxChild(CONTENT === 'short' ? [] : ['--content', CONTENT]);
  // Warm-up: module loading, JIT, SQLite and sockets, so the first case is not penalised.
  await harvestRun(sandbox, CONCURRENCIES[0] ?? 16, Math.min(N, 2_000));

  const rows: Row[] = [
    [
      'concurrency',
      'BullMQ µs/job',
      'harvest µs/search',
      'CPU ratio',
      'BullMQ jobs/s',
      'harvest searches/s',
      'done / failed',
    ],
  ];
  const ratios: { concurrency: number; ratio: number; each: number[] }[] = [];
  for (const concurrency of CONCURRENCIES) {
    const rounds: Array<{ ratio: number; baseline: BaselineCase; harvest: HarvestCase }> = [];
    let before = await bullmqBaseline(concurrency);
    for (let round = 1; round <= ROUNDS; round++) {
      const harvest = await harvestRun(sandbox, concurrency);
      const after = await bullmqBaseline(concurrency);
      const baseline = meanBaseline(before, after);
      before = after;
      const ratio = ownCpu(harvest.cpu) / ownCpu(baseline.cpu);
      rounds.push({ ratio, baseline, harvest });
      console.log(
        `  c=${concurrency}, round ${round}/${ROUNDS}: CPU per search ÷ CPU per BullMQ job ${fixed(ratio, 2)} ` +
          `(${baseline.workers} BullMQ workers of <= ${SLOTS_PER_WORKER} slots each side)`,
      );
      console.log(
        `    CPU per BullMQ job: ${formatCpu(baseline.cpu)} ` +
          `(mean of ${fixed(ownCpu(baseline.before), 0)} before and ${fixed(ownCpu(baseline.after), 0)} after)`,
      );
      console.log(`    CPU per search:     ${formatCpu(harvest.cpu)}`);
    }
    // The round of the median ratio stands for the concurrency (of an even count, the higher).
    const sorted = [...rounds].sort((a, b) => a.ratio - b.ratio);
    const { ratio, baseline, harvest } = sorted[Math.floor(sorted.length / 2)]!;
    console.log(
      `  c=${concurrency}: median of ${ROUNDS} rounds ${fixed(ratio, 2)} ` +
        `(each: ${rounds.map((r) => fixed(r.ratio, 2)).join(', ')})`,
    );
    console.log(
      `    throughput (no target): BullMQ ${fixed(baseline.perSec, 0)} jobs/s, harvest ${fixed(harvest.perSec, 0)} searches/s ` +
        `end to end, ${fixed(harvest.fromEnqueuePerSec, 0)} from its first enqueue`,
    );
    rows.push([
      String(concurrency),
      fixed(ownCpu(baseline.cpu), 0),
      fixed(ownCpu(harvest.cpu), 0),
      fixed(ratio, 2),
      fixed(baseline.perSec, 0),
      fixed(harvest.perSec, 0),
      `${harvest.done} / ${harvest.failed}`,
    ]);
    ratios.push({ concurrency, ratio, each: rounds.map((r) => r.ratio) });
  }
  await sandbox.stop();

  printBlock('overhead (CPU per unit: this process + Redis; the sandbox left out)', rows);
  console.log('');
  if (ratios.length === 0) {
    console.log(verdict(false, 'no concurrency was measured'));
    return;
  }
  for (const { concurrency, ratio, each } of ratios) {
    console.log(
      verdict(
        ratio <= MAX_CPU_RATIO,
        `c=${concurrency}: harvest CPU per search / BullMQ CPU per no-op job ${fixed(ratio, 2)} ` +
          `(median of ${each.length} rounds) <= ${fixed(MAX_CPU_RATIO, 1)}`,
      ),
    );
  }
}

runBench(main);
