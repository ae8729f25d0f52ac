/**
 * Runner overhead: harvest's end-to-end throughput (searches per second from startRun to the
 * run's completion, SQLite and all) against a zero-latency sandbox in a child process, divided
 * by the throughput of bare BullMQ no-op jobs (added with addBulk, processed by a Worker with
 * the same concurrency, on the same Redis) measured in the same run. Target: >= 0.35 at the
 * best concurrency tried.
 *
 * For comparison it also prints harvest's throughput over the baseline's span, from its first
 * enqueue (the run turning `running`, after parsing, planning and writing the task rows) to the
 * run's completion; the verdict stays on the end-to-end figure.
 *
 * It also prints the CPU time spent per search (per job for BullMQ) by this process's main
 * thread, its other threads (SQLite writer, garbage collector), the sandbox and Redis. Both
 * runs keep the machine's cores busy, so the ratio is close to the ratio of those totals, and
 * the split says where a gain has to come from.
 *
 * Run: `npx tsx test/bench/overhead.bench.ts`
 * Knobs (env): N (searches and jobs per case, default 20,000), CONCURRENCIES (default 64,256).
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { createLogger } from '../../src/log.ts';
import { openRuntime } from '../../src/run/runtime.ts';
import { startRun } from '../../src/run/start.ts';
import { waitForRun } from '../../src/run/wait.ts';
import { startLocalPool } from '../../src/worker/local.ts';
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
const MIN_RATIO = 0.35;
/** Jobs per addBulk call, as harvest's enqueue uses. */
const ADD_CHUNK = 1000;

/** CPU time per search or job, in µs, of the parts that share the machine. */
interface CpuSplit {
  /** This process's main thread (BullMQ, the API client, the journal, the sink). */
  main: number;
  /** Its other threads: the SQLite writer, V8's garbage collector and compiler, libuv. */
  threads: number;
  sandbox?: number;
  redis: number;
}

/** Starts counting CPU time; the returned function gives each part's µs per unit of `count`. */
async function cpuMeter(
  redis: Redis,
  sandboxPid?: number,
): Promise<(count: number) => Promise<CpuSplit>> {
  const self = process.cpuUsage();
  const main = readCpuMs(process.pid, process.pid) ?? 0;
  const sandbox = sandboxPid === undefined ? undefined : readCpuMs(sandboxPid);
  const redisMs = await readRedisCpuMs(redis);
  return async (count) => {
    const used = process.cpuUsage(self);
    const mainUs = ((readCpuMs(process.pid, process.pid) ?? 0) - main) * 1000;
    const sandboxNow = sandboxPid === undefined ? undefined : readCpuMs(sandboxPid);
    return {
      main: mainUs / count,
      threads: (used.user + used.system - mainUs) / count,
      sandbox:
        sandbox === undefined || sandboxNow === undefined
          ? undefined
          : ((sandboxNow - sandbox) * 1000) / count,
      redis: (((await readRedisCpuMs(redis)) - redisMs) * 1000) / count,
    };
  };
}

function formatCpu(cpu: CpuSplit): string {
  const parts = [`main thread ${fixed(cpu.main, 0)}`, `other threads ${fixed(cpu.threads, 0)}`];
  if (cpu.sandbox !== undefined) parts.push(`sandbox ${fixed(cpu.sandbox, 0)}`);
  parts.push(`Redis ${fixed(cpu.redis, 0)}`);
  const total = cpu.main + cpu.threads + (cpu.sandbox ?? 0) + cpu.redis;
  return `${parts.join(' + ')} = ${fixed(total, 0)} µs`;
}

/** Bare BullMQ: N no-op jobs through one Worker; jobs per second from the first add to the last completion. */
async function bullmqBaseline(concurrency: number): Promise<{ perSec: number; cpu: CpuSplit }> {
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
  const worker = new Worker('noop', async () => {}, { connection, prefix, concurrency });
  const closeWorker = closer(() => worker.close());
  worker.on('completed', () => {
    completed += 1;
    if (completed === N) resolveDone();
  });
  await worker.waitUntilReady();

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

  await closeWorker();
  await closeQueue();
  await closeConnection();
  return { perSec: N / seconds, cpu };
}

/** harvest: `count` plain searches; searches per second from startRun to the run's completion. */
async function harvestRun(
  sandbox: SandboxChild,
  concurrency: number,
  count = N,
): Promise<{
  perSec: number;
  /** From the first enqueue to completion, the span the baseline measures. */
  fromEnqueuePerSec: number;
  done: number;
  failed: number;
  cpu: CpuSplit;
}> {
  const dir = benchDir('overhead');
  const prefix = benchPrefix();
  const settings = benchSettings({ apiUrl: sandbox.url, prefix, dir });
  const logger = createLogger({ level: 'silent' });
  const file = path.join(dir, 'overhead.yaml');
  writeFileSync(file, matrixPipeline({ name: 'bench-overhead', count, concurrency }));
  const runtime = await openRuntime(settings);
  const closeRuntime = closer(() => runtime.close());
  const pool = await startLocalPool(settings, {
    roles: ['search', 'store'],
    concurrency,
    store: runtime.store,
    logger,
  });
  const closePool = closer(() => pool.close());

  const meter = await cpuMeter(runtime.redis, sandbox.child.pid);
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
      `vs ${N} bare BullMQ no-op jobs; concurrency ${CONCURRENCIES.join(', ')}`,
  );
  const sandbox = await startSandboxChild();
  // Warm-up: module loading, JIT, SQLite and sockets, so the first case is not penalised.
  await harvestRun(sandbox, CONCURRENCIES[0] ?? 16, Math.min(N, 2_000));

  const rows: Row[] = [['concurrency', 'BullMQ no-op', 'harvest', 'ratio', 'done / failed']];
  let best: { concurrency: number; ratio: number } | undefined;
  for (const concurrency of CONCURRENCIES) {
    const baseline = await bullmqBaseline(concurrency);
    const harvest = await harvestRun(sandbox, concurrency);
    const ratio = harvest.perSec / baseline.perSec;
    console.log(
      `  c=${concurrency}: BullMQ ${fixed(baseline.perSec, 0)} jobs/s, harvest ${fixed(harvest.perSec, 0)} searches/s, ratio ${fixed(ratio, 3)}`,
    );
    console.log(
      `    from its first enqueue (the baseline's span): harvest ${fixed(harvest.fromEnqueuePerSec, 0)} searches/s, ratio ${fixed(harvest.fromEnqueuePerSec / baseline.perSec, 3)}`,
    );
    console.log(`    CPU per BullMQ job: ${formatCpu(baseline.cpu)}`);
    console.log(`    CPU per search:     ${formatCpu(harvest.cpu)}`);
    rows.push([
      String(concurrency),
      `${fixed(baseline.perSec, 0)} jobs/s`,
      `${fixed(harvest.perSec, 0)} searches/s`,
      fixed(ratio, 3),
      `${harvest.done} / ${harvest.failed}`,
    ]);
    if (!best || ratio > best.ratio) best = { concurrency, ratio };
  }
  await sandbox.stop();

  printBlock('overhead', rows);
  console.log('');
  if (!best) {
    console.log(verdict(false, 'no concurrency was measured'));
    return;
  }
  console.log(
    verdict(
      best.ratio >= MIN_RATIO,
      `best harvest / BullMQ no-op ratio ${fixed(best.ratio, 3)} (concurrency ${best.concurrency}) >= ${MIN_RATIO}`,
    ),
  );
}

runBench(main);
