/**
 * Every request that reaches the service has a call row: its answer, or LOST. A search worker
 * (the `harvest worker` binary, search role only, so its records go through the store queue)
 * kills itself with SIGKILL at one step of its first call's life (HARVEST_TEST_KILL_AT,
 * jobs/search/kill-points.ts); then a pool with the search and store roles recovers as the
 * product does (it records the dead worker's journaled call as LOST, takes its job back when
 * the lock lapses, and commits what waits in the store queue). Once the run has completed and
 * nothing is journaled or waiting, the sandbox's count of requests equals the calls recorded
 * (LOST included); a worker killed before its request left counts one LOST call more.
 * Every step runs at once, each on its own harness (sandbox, Redis prefix, database).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { startLocalPool } from '../../jobs/local.ts';
import type { Pool } from '../../jobs/pool.ts';
import { KILL_POINTS, type KillPoint } from '../../src/config.ts';
import { InflightJournal } from '../../src/queue/inflight.ts';
import { resumeRun } from '../../src/run/resume.ts';
import { startRun } from '../../src/run/start.ts';
import { waitForRun } from '../../src/run/wait.ts';
import { BIN } from '../helpers/cli.ts';
import { type Harness, harvestEnv, startHarness } from '../helpers/harness.ts';
import { waitForDrained } from '../helpers/queues.ts';
import { deletePrefix } from '../helpers/redis.ts';
import { waitFor } from '../helpers/wait.ts';

const SEARCHES = 4;
/** Steps at which the request has not left: the worker's journaled call is LOST, unsent. */
const BEFORE_THE_REQUEST: readonly KillPoint[] = ['claimed', 'journaled'];

const harnesses: Harness[] = [];
const pools: Pool[] = [];
const children = new Set<ChildProcess>();

afterEach(async () => {
  for (const child of children) child.kill('SIGKILL');
  children.clear();
  for (const pool of pools.splice(0)) await pool.close();
  for (const harness of harnesses.splice(0)) await harness.stop();
});

/** A search worker (`harvest worker --roles search -c 1`); resolves with its end's signal. */
function searchWorker(
  h: Harness,
  env: NodeJS.ProcessEnv = {},
): { child: ChildProcess; exited: Promise<NodeJS.Signals | null> } {
  const args = [BIN, 'worker', '--roles', 'search', '-c', '1'];
  args.push('--lock-duration', '2000', '--stalled-interval', '1000');
  const child = spawn(process.execPath, args, {
    env: { ...harvestEnv(h), ...env },
    stdio: 'ignore',
  });
  children.add(child);
  const exited = new Promise<NodeJS.Signals | null>((resolve) =>
    child.once('exit', (_code, signal) => {
      children.delete(child);
      resolve(signal);
    }),
  );
  return { child, exited };
}

/** Requests the sandbox of `h` received (answered, or dropped). */
function requestsReceived(h: Harness): number {
  const team = h.sandbox.ledger().teams.sandbox;
  return Object.values(team?.calls ?? {}).reduce((sum, n) => sum + n, 0) + (team?.dropped ?? 0);
}

function pipelineOf(h: Harness, label: string, searches: number): string {
  const n = Array.from({ length: searches }, (_, i) => i).join(', ');
  return h.writePipeline(
    label,
    `name: ${label}\nsearches:\n  - matrix:\n      n: [${n}]\n    query: "${label} {n}"\n    limit: 2\n`,
  );
}

interface Accounting {
  step: KillPoint;
  signal: NodeJS.Signals | null;
  /** Requests the sandbox received (answered, or dropped). */
  requests: number;
  /** Call rows of the run, LOST ones included. */
  calls: number;
  lost: number;
  status: string;
}

async function killAndRecover(step: KillPoint): Promise<Accounting> {
  const h = await startHarness();
  harnesses.push(h);
  const file = pipelineOf(h, `killed-${step}`, SEARCHES);
  const { runId } = await startRun(h.runtime, file, { logger: h.logger });
  const signal = await searchWorker(h, { HARVEST_TEST_KILL_AT: step }).exited;
  // Recovery as the product does it: a pool with the search and store roles.
  pools.push(
    await startLocalPool(h.settings, {
      roles: ['search', 'store'],
      concurrency: 2,
      store: h.runtime.store,
      logger: h.logger,
      lockDurationMs: 2000,
      stalledIntervalMs: 1000,
    }),
  );
  const final = await waitForRun(h.runtime, runId, { pollMs: 100 });
  const journal = new InflightJournal(h.runtime.redis, h.runtime.keys);
  await waitFor('the journal empty', () => journal.pending(), {
    until: (n) => n === 0,
    timeoutMs: 30_000,
    intervalMs: 100,
  });
  await waitForDrained(h.runtime.storeQueue);
  const summary = h.runtime.store.calls.summary(runId);
  return {
    step,
    signal,
    requests: requestsReceived(h),
    calls: summary.calls,
    lost: summary.byOutcome.LOST ?? 0,
    status: final.status,
  };
}

describe('a worker killed at each step of a call', () => {
  it('leaves every request that reached the service with a call row', async () => {
    const seen = await Promise.all(KILL_POINTS.map((step) => killAndRecover(step)));
    const expected = seen.map((s) => {
      const unsent = BEFORE_THE_REQUEST.includes(s.step) ? 1 : 0;
      return { ...s, signal: 'SIGKILL', calls: s.requests + unsent, status: 'completed' };
    });
    expect(seen).toEqual(expected);
    // One search per task went through, plus the killed one where it reached the service.
    for (const s of seen) expect(s.requests).toBeGreaterThanOrEqual(SEARCHES);
  }, 60_000);

  it('leaves them a call row when Redis loses its data before the store role commits', async () => {
    const h = await startHarness();
    harnesses.push(h);
    const { runId } = await startRun(h.runtime, pipelineOf(h, 'emptied', 3), {
      logger: h.logger,
    });
    // No store role: the worker's records wait in the store queue, off the journal.
    const worker = searchWorker(h);
    const { storeQueue } = h.runtime;
    const queuedJobs = () => storeQueue.getJobCounts('waiting', 'prioritized');
    await waitFor('3 answers received and their records in the store queue', async () => {
      const counts = await queuedJobs();
      return requestsReceived(h) === 3 && (counts.waiting ?? 0) + (counts.prioritized ?? 0) > 0;
    });
    const journal = new InflightJournal(h.runtime.redis, h.runtime.keys);
    await waitFor('the journal empty', () => journal.pending(), { until: (n) => n === 0 });
    // Redis loses the prefix's data, records waiting in the store queue with it; the worker
    // notices (its watch marker is gone) and sends its calls' records again.
    await deletePrefix(h.settings.queuePrefix);
    await waitFor('the call records sent again', async () => {
      const counts = await queuedJobs();
      return (counts.waiting ?? 0) + (counts.prioritized ?? 0) > 0;
    });
    worker.child.kill('SIGKILL');
    await worker.exited;
    // The resume commits what waits in the store queue, then searches the unfinished tasks again.
    await resumeRun(h.runtime, runId, { logger: h.logger });
    pools.push(await h.startPool({ concurrency: 2 }));
    const final = await waitForRun(h.runtime, runId, { pollMs: 100 });
    expect(final.status).toBe('completed');
    const summary = h.runtime.store.calls.summary(runId);
    expect({ requests: requestsReceived(h), calls: summary.calls }).toEqual({
      requests: 6,
      calls: 6,
    });
  }, 60_000);
});
