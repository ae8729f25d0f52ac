/**
 * Runs larger than the queue window (src/run/feed/feeder.ts): Redis holds a window of search jobs,
 * refilled from SQLite as jobs end; cancel and resume work on a fed run; a feeder that dies is
 * taken over once its lease lapses. Real Redis, the sandbox on port 0, a temp SQLite file.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { startLocalPool } from '../../jobs/local.ts';
import type { Pool } from '../../jobs/pool.ts';
import { FeedState, jobsInQueue } from '../../src/run/feed/state.ts';
import { resumeRun } from '../../src/run/resume.ts';
import { startRun } from '../../src/run/start.ts';
import { stopRun } from '../../src/run/stop.ts';
import { waitForRun } from '../../src/run/wait.ts';
import { runCli, spawnCli } from '../helpers/cli.ts';
import { type Harness, harvestEnv, startHarness } from '../helpers/harness.ts';
import { waitFor } from '../helpers/wait.ts';

const BIN = path.resolve('bin/harvest.js');
const WINDOW = 20;

let h: Harness | undefined;
const pools: Pool[] = [];
const children = new Set<ChildProcess>();
let sampler: { stop(): Promise<number> } | undefined;

afterEach(async () => {
  await sampler?.stop();
  sampler = undefined;
  for (const c of children) c.kill('SIGKILL');
  children.clear();
  for (const p of pools.splice(0)) await p.close();
  await h?.stop();
  h = undefined;
});

function pipeline(name: string, n: number): string {
  const values = Array.from({ length: n }, (_, i) => i).join(', ');
  return `name: ${name}\nsearches:\n  - matrix:\n      n: [${values}]\n    query: "feed {n}"\n    limit: 2\n`;
}

async function harness(latencyMs: number): Promise<Harness> {
  return startHarness({
    sandbox: { latency: { minMs: latencyMs, maxMs: latencyMs * 2 } },
    env: { HARVEST_QUEUE_WINDOW: String(WINDOW) },
  });
}

async function pool(
  harness: Harness,
  roles: ('search' | 'store')[],
  concurrency = 8,
  leaseMs?: number,
): Promise<Pool> {
  const p = await startLocalPool(harness.settings, {
    roles,
    concurrency,
    store: harness.runtime.store,
    logger: harness.logger,
    feeder: { pollMs: 20, ...(leaseMs === undefined ? {} : { leaseMs }) },
  });
  pools.push(p);
  return p;
}

/** Samples the jobs in the search queue every few ms; `stop` gives the largest count seen. */
function sampleQueue(harness: Harness): { stop(): Promise<number> } {
  let max = 0;
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      max = Math.max(max, await jobsInQueue(harness.runtime.searchQueue));
      await sleep(5); // the sampling period
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
      return max;
    },
  };
}

/**
 * Every task done with exactly one call (n done tasks, n calls recorded, n calls billed) and
 * its results stored once (positions 0..k-1, no duplicates).
 */
function expectStoredOnce(harness: Harness, runId: string, n: number): void {
  const store = harness.runtime.store;
  expect(store.tasks.counts(runId)).toMatchObject({ done: n, failed: 0, total: n });
  const summary = store.calls.summary(runId);
  expect(summary.calls).toBe(n);
  const team = harness.sandbox.ledger().teams.sandbox!;
  expect(Object.values(team.calls).reduce((a, b) => a + b, 0)).toBe(n);
  const perTask = new Map<string, number[]>();
  for (const row of store.iterateResults(runId)) {
    perTask.set(row.taskKey, [...(perTask.get(row.taskKey) ?? []), row.position]);
  }
  expect(perTask.size).toBeGreaterThan(n / 2);
  for (const positions of perTask.values()) {
    expect([...positions].sort((a, b) => a - b)).toEqual(positions.map((_, i) => i));
  }
}

describe('the queue window', () => {
  it('enqueues a run no larger than the window whole, with no feeding', async () => {
    h = await harness(0);
    const { runId } = await startRun(h.runtime, h.writePipeline('small', pipeline('small', 20)), {
      logger: h.logger,
    });
    expect(await jobsInQueue(h.runtime.searchQueue)).toBe(20);
    expect(await new FeedState(h.runtime.redis, h.runtime.keys).get(runId)).toBeUndefined();
  });

  it('a run that fits the window whose enqueuing was stopped is fed the rest, and finishes', async () => {
    h = await harness(0);
    const stop = new AbortController();
    // The first Ctrl-C of a run others work stops enqueuing, not the run.
    const { runId } = await startRun(h.runtime, h.writePipeline('cut', pipeline('cut', 15)), {
      logger: h.logger,
      signal: stop.signal,
      onRecorded: () => stop.abort(),
    });
    expect(await jobsInQueue(h.runtime.searchQueue)).toBeLessThan(15);
    expect(await new FeedState(h.runtime.redis, h.runtime.keys).get(runId)).toBeDefined();
    await pool(h, ['search', 'store'], 4);
    const final = await waitForRun(h.runtime, runId, { pollMs: 50 });
    expect(final.status).toBe('completed');
    expectStoredOnce(h, runId, 15);
  });

  it('runs a larger run through a window: every task stored once, Redis never above it', async () => {
    h = await harness(2);
    const file = h.writePipeline('large', pipeline('large', 300));
    sampler = sampleQueue(h);
    const { runId } = await startRun(h.runtime, file, { logger: h.logger });
    const feed = new FeedState(h.runtime.redis, h.runtime.keys);
    // What fits now is enqueued, and the run is fed from there.
    expect(await feed.get(runId)).toMatchObject({ after: expect.any(String) });
    await pool(h, ['search', 'store']);
    const final = await waitForRun(h.runtime, runId, { pollMs: 50 });
    const max = await sampler.stop();
    sampler = undefined;
    expect(final.status).toBe('completed');
    expect(max).toBeGreaterThan(WINDOW / 2);
    expect(max).toBeLessThanOrEqual(WINDOW);
    expectStoredOnce(h, runId, 300);
    expect(await feed.get(runId)).toBeUndefined();
  }, 60_000);

  it('status says how many tasks wait for the window, and whether anyone feeds them', async () => {
    h = await harness(0);
    const { runId } = await startRun(h.runtime, h.writePipeline('fed', pipeline('fed', 50)), {
      logger: h.logger,
    });
    // No store worker yet: the window is all Redis has, and nothing refills it.
    const unfed = await runCli(['status', runId], h.settings);
    expect(unfed.stdout).toContain(
      `  window   ${50 - WINDOW} tasks wait in SQLite for the queue window, and no store worker feeds them`,
    );
    const json = JSON.parse((await runCli(['status', runId, '--json'], h.settings)).stdout);
    expect(json.feed).toEqual({ notFed: 50 - WINDOW, feeder: null });

    const feeding = await new FeedState(h.runtime.redis, h.runtime.keys).hold('vm-1-feeder', 5000);
    expect(feeding).toBe(true);
    const fed = await runCli(['status', runId], h.settings);
    expect(fed.stdout).toContain(
      `  window   ${50 - WINDOW} tasks wait in SQLite for the queue window; vm-1-feeder feeds them`,
    );
  }, 60_000);

  it('cancels a fed run (only the window leaves the queue) and resumes it to the end', async () => {
    h = await harness(20);
    const file = h.writePipeline('stop', pipeline('stop', 200));
    const { runId } = await startRun(h.runtime, file, { logger: h.logger });
    const feed = new FeedState(h.runtime.redis, h.runtime.keys);
    await pool(h, ['search', 'store'], 4);
    await waitFor('40 tasks done', () => h!.runtime.store.tasks.counts(runId).done >= 40);

    const stopped = await stopRun(h.runtime, runId, 'cancelled');
    expect(stopped.removedJobs).toBeGreaterThan(0);
    expect(stopped.removedJobs).toBeLessThanOrEqual(WINDOW);
    expect(await feed.get(runId)).toBeUndefined();
    // Calls in flight finish; nothing more starts, and nothing is fed.
    await waitFor('the calls in flight to finish', () => h!.runtime.searchQueue.getActiveCount(), {
      until: (n) => n === 0,
    });
    const doneAtStop = h.runtime.store.tasks.counts(runId).done;
    // A fixed duration: no task is done over a while once the run is cancelled.
    await sleep(500);
    expect(h.runtime.store.tasks.counts(runId).done).toBe(doneAtStop);
    expect(doneAtStop).toBeLessThan(200);
    const waiting = await h.runtime.searchQueue.getJobCounts('waiting', 'prioritized', 'active');
    expect(Object.values(waiting).reduce((a, b) => a + b, 0)).toBe(0);

    const resumed = await resumeRun(h.runtime, runId, { logger: h.logger });

    expect(resumed.requeued).toBe(200 - doneAtStop);
    const final = await waitForRun(h.runtime, runId, { pollMs: 50 });
    expect(final.status).toBe('completed');
    expectStoredOnce(h, runId, 200);
  }, 60_000);

  it('cancels a fed run resumed while its window was still queued: every queued job leaves', async () => {
    h = await harness(20);
    const file = h.writePipeline('held', pipeline('held', 3 * WINDOW));
    // No worker: the window stays queued, as it does while the queue is paused for the API key.
    const { runId } = await startRun(h.runtime, file, { logger: h.logger });
    expect(await jobsInQueue(h.runtime.searchQueue)).toBe(WINDOW);
    // The window is full: the resume queues nothing and feeds from the start again.
    await resumeRun(h.runtime, runId, { logger: h.logger });
    expect(await jobsInQueue(h.runtime.searchQueue)).toBe(WINDOW);

    const stopped = await stopRun(h.runtime, runId, 'cancelled');
    expect(stopped.removedJobs).toBe(WINDOW);
    expect(await jobsInQueue(h.runtime.searchQueue)).toBe(0);
  });

  it('resumes a fed run after Redis lost its jobs and its cursor', async () => {
    h = await harness(2);
    const file = h.writePipeline('lost', pipeline('lost', 150));
    const { runId } = await startRun(h.runtime, file, { logger: h.logger });
    // Redis loses the queue and the feed entry before any worker came.
    await h.runtime.searchQueue.obliterate({ force: true });
    await h.runtime.redis.del(h.runtime.keys.feed);
    await pool(h, ['search', 'store']);
    // A fixed duration: nothing is searched over a while, with no job and no feed entry.
    await sleep(300);
    expect(h.runtime.store.tasks.counts(runId).done).toBe(0);
    await resumeRun(h.runtime, runId, { logger: h.logger });
    const final = await waitForRun(h.runtime, runId, { pollMs: 50 });
    expect(final.status).toBe('completed');
    expectStoredOnce(h, runId, 150);
  }, 60_000);

  it('holds a budget across the fed tasks as it did across enqueued ones', async () => {
    h = await harness(2);
    const file = h.writePipeline('budget', `${pipeline('budget', 100)}budget:\n  maxCredits: 60\n`);
    const { runId } = await startRun(h.runtime, file, { logger: h.logger });
    await pool(h, ['search', 'store'], 4);
    const final = await waitForRun(h.runtime, runId, { pollMs: 50 });
    expect(final.done + final.failed).toBe(100);
    const summary = h.runtime.store.calls.summary(runId);
    expect(summary.creditsUsed).toBeLessThanOrEqual(60);
    expect(final.done).toBeGreaterThan(0);
    expect(h.runtime.store.tasks.failedByCode(runId)).toHaveProperty('BUDGET_EXCEEDED');
  }, 60_000);

  it('run --wait feeds its run while it waits, and the store worker feeds again after', async () => {
    h = await harness(5);
    const feed = new FeedState(h.runtime.redis, h.runtime.keys);
    const here = await pool(h, ['search', 'store'], 4);
    await waitFor('the store worker to hold the feeder lease', () => feed.holder(), {
      until: (holder) => holder === here.workerId,
    });
    const file = h.writePipeline('asked', pipeline('asked', 300));
    sampler = sampleQueue(h);
    const cli = spawnCli(['run', file, '--wait'], h.settings, {
      HARVEST_QUEUE_WINDOW: String(WINDOW),
    });
    children.add(cli.child);
    // The store worker lets go of the lease between two rounds, and `run` takes it.
    const holders = new Set<string>();
    let code: number | null | undefined;
    void cli.exited.then((c) => {
      code = c;
    });
    const exited = async () => {
      const holder = await feed.holder();
      if (holder) holders.add(holder);
      return code !== undefined;
    };
    await waitFor('`run --wait` to exit', exited, { timeoutMs: 50_000 });
    children.delete(cli.child);
    expect(code, cli.stderr()).toBe(0);
    expect([...holders].some((x) => x.startsWith('run-'))).toBe(true);
    // `run` gave the lease back as it ended: the store worker holds it again at its next round.
    await waitFor('the store worker to hold the feeder lease again', () => feed.holder(), {
      until: (holder) => holder === here.workerId,
    });
    const max = await sampler.stop();
    sampler = undefined;
    expect(max).toBeLessThanOrEqual(WINDOW);
    const [runId] = h.runtime.store.runs.list({ limit: 1 }).map((r) => r.id);
    expectStoredOnce(h, runId!, 300);
  }, 60_000);

  it('takes over from a feeder process that died', async () => {
    h = await harness(5);
    const harnessNow = h;
    const feed = new FeedState(h.runtime.redis, h.runtime.keys);
    // A store role in another process feeds first (its lease: the default 10 s).
    const child = spawn(process.execPath, [BIN, 'worker', '--roles', 'store'], {
      env: { ...harvestEnv(h), HARVEST_QUEUE_WINDOW: String(WINDOW) },
      stdio: 'ignore',
    });
    children.add(child);
    await waitFor('the other process to hold the feeder lease', () => feed.holder(), {
      timeoutMs: 30_000,
      intervalMs: 50,
    });
    const first = await feed.holder();

    const file = h.writePipeline('takeover', pipeline('takeover', 300));
    sampler = sampleQueue(h);
    const { runId } = await startRun(h.runtime, file, { logger: h.logger });
    // A pool here with the store role too: it records its own calls (the other process only
    // feeds), and waits for the lease.
    const here = await pool(h, ['search', 'store'], 4);
    expect(await feed.holder()).toBe(first);
    await waitFor('60 tasks done', () => harnessNow.runtime.store.tasks.counts(runId).done >= 60);
    expect(await feed.holder()).toBe(first);
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    children.delete(child);

    // Once the dead feeder's lease lapses, this pool feeds the rest.
    const final = await waitForRun(h.runtime, runId, { pollMs: 50 });
    const max = await sampler.stop();
    sampler = undefined;
    expect(final.status).toBe('completed');
    expect(await feed.holder()).toBe(here.workerId);
    expect(first).not.toBe(here.workerId);
    expect(max).toBeLessThanOrEqual(WINDOW);
    expectStoredOnce(h, runId, 300);
  }, 60_000);
});
