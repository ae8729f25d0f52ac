/**
 * Crash safety: search workers in child processes are killed with SIGKILL mid-run and
 * restarted; Redis loses every key of the deployment mid-run and `--resume` recovers.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Worker } from 'bullmq';
import { afterEach, describe, expect, it } from 'vitest';
import { startLocalPool } from '../../jobs/local.ts';
import { type Pool, startPool } from '../../jobs/pool.ts';
import { createApiClient } from '../../src/api/index.ts';
import { estimateSearchCredits } from '../../src/contract/index.ts';
import { Budget } from '../../src/queue/budget.ts';
import { createRedis } from '../../src/queue/connection.ts';
import { InflightJournal } from '../../src/queue/inflight.ts';
import { QUEUES } from '../../src/queue/names.ts';
import { resumeRun } from '../../src/run/resume.ts';
import { startRun } from '../../src/run/start.ts';
import { waitForRun } from '../../src/run/wait.ts';
import { type Harness, startHarness } from '../helpers/harness.ts';
import { waitForDrained } from '../helpers/queues.ts';
import { deletePrefix } from '../helpers/redis.ts';
import { waitFor } from '../helpers/wait.ts';
import { useWorkerProcesses } from '../helpers/workers.ts';

let h: Harness | undefined;
let storePool: Pool | undefined;
const spawnSearchWorker = useWorkerProcesses();

afterEach(async () => {
  await storePool?.close();
  storePool = undefined;
  await h?.stop();
  h = undefined;
});

function matrixPipeline(name: string, n: number): string {
  return `name: ${name}\nrun:\n  maxAttempts: 10\nsearches:\n  - matrix:\n      n: [${Array.from({ length: n }, (_, i) => i).join(', ')}]\n    query: "crash test {n}"\n    limit: 4\n`;
}

function ledger(harness: Harness): { calls: number; creditsCharged: number } {
  const team = harness.sandbox.ledger().teams.sandbox;
  if (!team) return { calls: 0, creditsCharged: 0 };
  const calls = Object.values(team.calls).reduce((a, b) => a + b, 0);
  return { calls, creditsCharged: team.creditsCharged };
}

describe('crash safety', () => {
  it('survives search workers killed with SIGKILL: every task stored once, credits accounted for', async () => {
    h = await startHarness({ sandbox: { latency: { minMs: 20, maxMs: 60 } } });
    storePool = await startLocalPool(h.settings, {
      roles: ['store'],
      store: h.runtime.store,
      logger: h.logger,
    });
    const file = h.writePipeline(
      'crash',
      `${matrixPipeline('it-crash', 150)}budget:\n  maxCredits: 100000\n`,
    );
    const { runId } = await startRun(h.runtime, file, { logger: h.logger });

    const journal = new InflightJournal(h.runtime.redis, h.runtime.keys);
    for (let kill = 0; kill < 3; kill++) {
      const child = spawnSearchWorker(h);
      // Kill it while it has calls in flight: the kill interrupts work, whatever the timing.
      await waitFor('a call journaled by the worker', () => journal.pending(), {
        until: (n) => n > 0,
        timeoutMs: 30_000,
        intervalMs: 10,
      });
      child.kill('SIGKILL');
      await new Promise((r) => child.once('exit', r));
      expect(await journal.pending()).toBeGreaterThan(0);
    }
    spawnSearchWorker(h);
    const final = await waitForRun(h.runtime, runId, { pollMs: 100 });
    expect(final.status).toBe('completed');
    // Calls journaled by the killed workers are recorded (as LOST) once their heartbeat lapses.
    await waitFor('the journal to empty', () => journal.pending(), {
      until: (n) => n === 0,
      timeoutMs: 10_000,
      intervalMs: 100,
    });
    expect(await journal.pending()).toBe(0);
    await waitForDrained(h!.runtime.storeQueue);

    const store = h.runtime.store;
    const counts = store.tasks.counts(runId);
    expect(counts.done).toBe(150);
    // Each task's results are stored once: positions 0..n-1 per source, no duplicates.
    const perTask = new Map<string, number[]>();
    for (const row of store.iterateResults(runId)) {
      const list = perTask.get(row.taskKey) ?? [];
      list.push(row.position);
      perTask.set(row.taskKey, list);
    }
    for (const positions of perTask.values()) {
      expect([...positions].sort((a, b) => a - b)).toEqual(positions.map((_, i) => i));
    }

    // Credits: what harvest knows equals the bill, but for calls whose answer died with a
    // worker (recorded as LOST, cost unknown); each of those can cost at most one task's max.
    const summary = store.calls.summary(runId);
    const billed = ledger(h).creditsCharged;
    const maxPerCall = estimateSearchCredits({ limit: 4 }).max;
    expect(summary.creditsUsed).toBeLessThanOrEqual(billed);
    expect(billed - summary.creditsUsed).toBeLessThanOrEqual(summary.unknownCostCalls * maxPerCall);
    if (summary.unknownCostCalls === 0) expect(summary.creditsUsed).toBe(billed);
    expect(summary.calls).toBeGreaterThanOrEqual(ledger(h).calls);
    // The kills interrupted calls: recorded as LOST, of unknown cost, so the budget counter
    // holds what is known to be spent plus each of those calls' worst case (the service may
    // have billed them), kept under a mark of their own; no call is left in flight.
    const lost = summary.byOutcome.LOST ?? 0;
    expect(lost).toBeGreaterThanOrEqual(3);
    const { keys, redis } = h.runtime;
    expect(Number(await redis.hget(keys.budget, runId))).toBe(
      summary.creditsUsed + summary.unknownCostCalls * maxPerCall,
    );
    expect(await new Budget(redis, keys).settled(runId, keys.inflight)).toBe(
      summary.creditsUsed + summary.unknownCostCalls * maxPerCall,
    );
    const marks = Object.keys(await redis.hgetall(keys.reservations));
    expect(marks).toHaveLength(lost);
    expect(marks.every((field) => field.startsWith(`lost|${runId}|`))).toBe(true);
  }, 120_000);

  it('stops gracefully on SIGTERM: calls in flight finish and are recorded, nothing is lost', async () => {
    h = await startHarness({ sandbox: { latency: { minMs: 100, maxMs: 200 } } });
    storePool = await startLocalPool(h.settings, {
      roles: ['store'],
      store: h.runtime.store,
      logger: h.logger,
    });
    const file = h.writePipeline('sigterm', matrixPipeline('it-sigterm', 60));
    const { runId } = await startRun(h.runtime, file, { logger: h.logger });
    const child = spawnSearchWorker(h);
    await waitFor('5 tasks done', () => h!.runtime.store.tasks.counts(runId).done >= 5, {
      timeoutMs: 30_000,
    });
    child.kill('SIGTERM');
    const code = await new Promise((r) => child.once('exit', r));
    expect(code).toBe(0);
    const journal = new InflightJournal(h.runtime.redis, h.runtime.keys);
    expect(await journal.pending()).toBe(0);
    await waitForDrained(h!.runtime.storeQueue);
    const summary = h.runtime.store.calls.summary(runId);
    expect(summary.byOutcome.LOST ?? 0).toBe(0);
    expect(summary.calls).toBe(ledger(h).calls);
    expect(summary.creditsUsed).toBe(ledger(h).creditsCharged);
    const stoppedAt = h.runtime.store.tasks.counts(runId);
    expect(stoppedAt.done).toBeLessThan(60);

    spawnSearchWorker(h);
    const final = await waitForRun(h.runtime, runId, { pollMs: 100 });
    expect(final.status).toBe('completed');
    expect(final.done).toBe(60);
  }, 120_000);

  it('a closing pool keeps its heartbeat until its calls are recorded: a slow call is not reaped as lost', async () => {
    h = await startHarness({ sandbox: { latency: { minMs: 2500, maxMs: 2500 } } });
    const file = h.writePipeline('slow-close', matrixPipeline('it-slow-close', 1));
    const { runId } = await startRun(h.runtime, file, { logger: h.logger });
    // A search-only pool whose heartbeat lives 1 s, with one slow call in flight.
    const closing = await startLocalPool(h.settings, {
      roles: ['search'],
      concurrency: 1,
      logger: h.logger,
      lockDurationMs: 1000,
    });
    const journal = new InflightJournal(h.runtime.redis, h.runtime.keys);
    await waitFor('the slow call journaled', () => journal.pending(), { until: (n) => n > 0 });
    // Another pool, which reaps the calls of silent workers every second.
    storePool = await startLocalPool(h.settings, {
      roles: ['search', 'store'],
      store: h.runtime.store,
      logger: h.logger,
      lockDurationMs: 1000,
      stalledIntervalMs: 60_000,
    });
    await closing.close();

    const final = await waitForRun(h.runtime, runId, { pollMs: 50 });
    expect(final.status).toBe('completed');
    expect(h.logs()).not.toContain('recorded calls lost with a dead worker');
    expect(h.runtime.store.calls.summary(runId)).toMatchObject({
      calls: 1,
      byOutcome: { ok: 1 },
      unknownCostCalls: 0,
      creditsUsed: ledger(h).creditsCharged,
    });
  }, 60_000);

  it('records a task whose job stalled too often as failed (STALLED), so the run ends', async () => {
    h = await startHarness();
    const file = h.writePipeline('stalled', matrixPipeline('it-stalled', 1));
    const { runId } = await startRun(h.runtime, file, { logger: h.logger });
    // A worker takes the job and dies: its lock is never renewed.
    const connection = createRedis(h.settings.redisUrl, 'worker');
    const dead = new Worker(QUEUES.search, null, {
      connection,
      prefix: h.settings.queuePrefix,
      lockDuration: 300,
      autorun: false,
    });
    expect(await dead.getNextJob('dead-worker')).toBeDefined();
    await dead.close(true);
    await connection.quit();

    const client = createApiClient({ baseUrl: h.settings.apiUrl, apiKey: h.settings.apiKey ?? '' });
    storePool = await startPool({
      redisUrl: h.settings.redisUrl,
      prefix: h.settings.queuePrefix,
      roles: ['search', 'store'],
      client,
      store: h.runtime.store,
      logger: h.logger,
      stalledIntervalMs: 300,
      maxStalledCount: 0,
    });
    const final = await waitForRun(h.runtime, runId, { pollMs: 50 });
    expect(final).toMatchObject({ status: 'failed', failed: 1, done: 0 });
    const [task] = [...h.runtime.store.tasks.unfinished(runId)];
    expect(task).toBeUndefined();
    expect(h.runtime.store.tasks.failedByCode(runId)).toEqual({ STALLED: 1 });
  }, 60_000);

  it('recovers from a Redis that lost everything: --resume completes the run, nothing lost or doubled', async () => {
    h = await startHarness({ sandbox: { latency: { minMs: 10, maxMs: 30 } } });
    const file = h.writePipeline('flush', matrixPipeline('it-flush', 200));
    await h.startPool({ concurrency: 4 });
    const { runId } = await startRun(h.runtime, file, { logger: h.logger });
    // Let part of the run finish, then lose every key of this deployment.
    await waitFor('40 tasks done', () => h!.runtime.store.tasks.counts(runId).done >= 40);
    // Workers keep running while their queues vanish under them.
    await deletePrefix(h.settings.queuePrefix);
    // A fixed duration: the scenario is workers running on for a while over vanished queues.
    await sleep(300);
    const before = h.runtime.store.tasks.counts(runId);
    expect(before.done).toBeLessThan(200);

    const { requeued } = await resumeRun(h.runtime, runId, { logger: h.logger });
    expect(requeued).toBeGreaterThan(0);
    expect(requeued).toBeLessThanOrEqual(200 - before.done);
    const final = await waitForRun(h.runtime, runId, { pollMs: 100 });
    expect(final.status).toBe('completed');
    expect(h.runtime.store.tasks.counts(runId).done).toBe(200);
    const keys = new Set<string>();
    for (const row of h.runtime.store.iterateResults(runId)) {
      const k = `${row.taskKey}/${row.source}/${row.position}`;
      expect(keys.has(k)).toBe(false);
      keys.add(k);
    }
    expect(h.runtime.store.results.count(runId)).toBe(keys.size);
  }, 120_000);
});
