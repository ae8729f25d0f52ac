/**
 * Search workers killed (SIGKILL) at arbitrary moments of busy runs: a job whose call was
 * recorded but whose end BullMQ never heard comes back as stalled, and must end without calling
 * (and being billed) again. Every task is searched successfully once: one `ok` call per task,
 * whatever else (LOST calls of workers killed mid-call) is recorded. Two layouts: search
 * workers apart from the store role (their records go through the store queue), and workers
 * that own the database (records committed by the worker itself).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startLocalPool } from '../../jobs/local.ts';
import type { Pool } from '../../jobs/pool.ts';
import type { InflightCall } from '../../src/queue/inflight.ts';
import { queueWrite } from '../../src/queue/store-queue.ts';
import { startRun } from '../../src/run/start.ts';
import { waitForRun } from '../../src/run/wait.ts';
import { type Harness, startHarness } from '../helpers/harness.ts';
import { unfinishedJobs, waitForDrained } from '../helpers/queues.ts';
import { waitFor } from '../helpers/wait.ts';
import { useWorkerProcesses } from '../helpers/workers.ts';

const TASKS = 600;
const KILLS = 5;

let h: Harness | undefined;
let storePool: Pool | undefined;
const spawnWorker = useWorkerProcesses();

afterEach(async () => {
  await storePool?.close();
  storePool = undefined;
  await h?.stop();
  h = undefined;
});

function pipeline(name: string): string {
  const n = Array.from({ length: TASKS }, (_, i) => i).join(', ');
  return `name: ${name}\nrun:\n  maxAttempts: 10\nsearches:\n  - matrix:\n      n: [${n}]\n    query: "${name} {n}"\n    limit: 2\n`;
}

/** Starts a run, kills KILLS workers of `roles` each after 40 more tasks are done, lets one finish. */
async function killWhileBusy(harness: Harness, name: string, roles: string) {
  const file = harness.writePipeline(name, pipeline(name));
  const { runId } = await startRun(harness.runtime, file, { logger: harness.logger });
  const done = () => harness.runtime.store.tasks.counts(runId).done;
  for (let kill = 0; kill < KILLS; kill++) {
    const child = spawnWorker(harness, { roles, concurrency: 16 });
    const before = done();
    await waitFor(`40 more tasks done (from ${before})`, done, {
      until: (n) => n >= before + 40,
      timeoutMs: 30_000,
      intervalMs: 5,
    });
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('exit', resolve));
  }
  spawnWorker(harness, { roles, concurrency: 16 });
  const final = await waitForRun(harness.runtime, runId, { pollMs: 100 });
  return { runId, final };
}

describe('search workers killed between a record and the end of its job', () => {
  it('apart from the store role: no task is searched again once its success is recorded', async () => {
    h = await startHarness({ sandbox: { latency: { minMs: 0, maxMs: 5 } } });
    storePool = await startLocalPool(h.settings, {
      roles: ['store'],
      store: h.runtime.store,
      logger: h.logger,
    });
    const { runId, final } = await killWhileBusy(h, 'apart', 'search');
    expect(final.status).toBe('completed');
    expect(h.runtime.store.calls.summary(runId).byOutcome.ok).toBe(TASKS);
  }, 180_000);

  it('owning the database: no task is searched again once its success is committed', async () => {
    h = await startHarness({ sandbox: { latency: { minMs: 0, maxMs: 5 } } });
    const { runId, final } = await killWhileBusy(h, 'owning', 'search,store');
    expect(final.status).toBe('completed');
    expect(h.runtime.store.calls.summary(runId).byOutcome.ok).toBe(TASKS);
  }, 180_000);

  it('apart from a store role that lags: a job whose success waits in the store queue is not searched again', async () => {
    // Each call takes 3 s; no store role runs until the end (it lags behind the job's lock).
    h = await startHarness({ sandbox: { latency: { minMs: 3000, maxMs: 3000 } } });
    const file = h.writePipeline('lagging', 'name: lagging\nsearches:\n  - query: "lag"\n');
    const { runId } = await startRun(h.runtime, file, { logger: h.logger });
    const { redis, keys, searchQueue, storeQueue, store } = h.runtime;
    const first = spawnWorker(h, { roles: 'search', concurrency: 1 });
    const call = await waitFor("the first worker's call journaled", async () => {
      const [raw] = await redis.hvals(keys.inflight);
      return raw === undefined ? undefined : (JSON.parse(raw) as InflightCall);
    });
    // The worker's success goes to the store queue as its own write does (queueWrite), and the
    // worker dies before its own done mark: the state of a SIGKILL between the two.
    const { taskKey } = call;
    await queueWrite(
      storeQueue,
      redis,
    )([
      { ...okCall, callId: call.callId, runId, taskKey, startedAt: call.startedAt },
      { type: 'task', runId, taskKey, status: 'done', attempts: 1, at: Date.now() },
    ]);
    first.kill('SIGKILL');
    await new Promise((resolve) => first.once('exit', resolve));
    // Another worker takes the job when it comes back (within 1-2 s), before any store role.
    spawnWorker(h, { roles: 'search', concurrency: 1 });
    // Back as stalled after its lock lapses, then ended (by calling again, without the mark):
    // the job is active (held by the dead worker) until the new worker has ended it.
    const left = () => unfinishedJobs(searchQueue);
    await waitFor('the new worker to end the stalled job', left, {
      until: (n) => n === 0,
      timeoutMs: 21_000,
      intervalMs: 100,
    });
    expect(await left()).toBe(0);
    // The store role comes at last: one ok call, the one recorded.
    storePool = await startLocalPool(h.settings, { roles: ['store'], store, logger: h.logger });
    const final = await waitForRun(h.runtime, runId, { pollMs: 100 });
    expect(final.status).toBe('completed');
    // The job has ended, so a call made again was answered and its record queued before: once
    // the store queue is drained, every record of the run is in SQLite.
    await waitForDrained(storeQueue);
    expect(store.calls.summary(runId).byOutcome.ok).toBe(1);
    expect(h.sandbox.ledger().teams.sandbox?.calls['200'] ?? 0).toBeLessThanOrEqual(1);
  }, 60_000);
});

const okCall = {
  type: 'call' as const,
  attempt: 1,
  durationMs: 3000,
  status: 200,
  outcome: 'ok' as const,
  searchId: 'search-1',
  creditsUsed: 1,
};
