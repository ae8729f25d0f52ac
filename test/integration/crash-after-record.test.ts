/**
 * Search workers killed (SIGKILL) at arbitrary moments of busy runs: a job whose call was
 * recorded but whose end BullMQ never heard comes back as stalled, and must end without calling
 * (and being billed) again. Every task is searched successfully once: one `ok` call per task,
 * whatever else (LOST calls of workers killed mid-call) is recorded. Two layouts: search
 * workers apart from the store role (their records go through the store queue), and workers
 * that own the database (records committed by the worker itself).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { startRun } from '../../src/run/start.ts';
import { waitForRun } from '../../src/run/wait.ts';
import { startLocalPool } from '../../src/worker/local.ts';
import type { Pool } from '../../src/worker/pool.ts';
import { type Harness, startHarness } from '../helpers/harness.ts';
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
    while (done() < before + 40) await sleep(5);
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
});
