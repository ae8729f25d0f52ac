/**
 * A run larger than the queue window, resumed while its jobs are live, is fed again from its
 * first task (cursor reset to ''): the feeder reads SQLite later, and must not add the tasks
 * whose jobs were live at the resume, some of which complete (leave Redis) while their events
 * still wait in the store queue.
 * Search workers on other hosts (roles search), `harvest run --resume RUN --wait` feeding
 * (preferred feeder, as `harvest run` does), no store role committing yet. And a run resumed
 * again and again while a store role feeds it: a page its feeder adds during a resume, under
 * the run's old feed entry, must not escape the resume's read of the live jobs. And a resume
 * that fails midway (a disk error) leaves the run fed as it was.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { startLocalPool } from '../../jobs/local.ts';
import type { Pool } from '../../jobs/pool.ts';
import { Feeder } from '../../src/run/feed/feeder.ts';
import { FeedState } from '../../src/run/feed/state.ts';
import { resumeRun } from '../../src/run/resume.ts';
import { startRun } from '../../src/run/start.ts';
import { waitForRun } from '../../src/run/wait.ts';
import { type Harness, startHarness } from '../helpers/harness.ts';
import { unfinishedJobs, waitForDrained } from '../helpers/queues.ts';
import { waitFor } from '../helpers/wait.ts';

let h: Harness | undefined;
let feeder: Feeder | undefined;
const pools: Pool[] = [];
afterEach(async () => {
  for (const pool of pools.splice(0)) await pool.close();
  await feeder?.stop();
  feeder = undefined;
  await h?.stop();
  h = undefined;
});

/** Waits until nothing can search for the run any more: its feeding ended, its jobs ended. */
async function waitForSearchesEnded(harness: Harness, runId: string): Promise<void> {
  const feed = new FeedState(harness.runtime.redis, harness.runtime.keys);
  const state = async () => ({
    fed: (await feed.get(runId)) !== undefined,
    jobs: await unfinishedJobs(harness.runtime.searchQueue),
  });
  await waitFor("the run's feeding and its search jobs to end", state, {
    until: (s) => !s.fed && s.jobs === 0,
  });
}

const TASKS = 20;
const PIPELINE = `name: resume-fed
searches:
  - matrix:
      n: [${Array.from({ length: TASKS }, (_, i) => i).join(', ')}]
    query: "resume fed {n}"
    limit: 2
`;

describe('resume of a fed run during live jobs', () => {
  it('never searches (and bills) a task a second time', async () => {
    h = await startHarness({
      sandbox: { latency: { minMs: 400, maxMs: 400 } },
      env: { HARVEST_QUEUE_WINDOW: '10' },
    });
    const file = h.writePipeline('fed', PIPELINE);
    await h.startPool({ concurrency: 10, roles: ['search'] });
    const { runId } = await startRun(h.runtime, file, { logger: h.logger });
    await waitFor(
      'the first window (10 jobs) held by the search workers',
      () => h!.runtime.searchQueue.getActiveCount(),
      { until: (n) => n === 10 },
    );
    await resumeRun(h.runtime, runId, { logger: h.logger });
    // What `run --resume --wait` starts (src/cli/actions/run.ts #startFeeder).
    feeder = new Feeder(
      {
        store: h.runtime.store,
        queue: h.runtime.searchQueue,
        redis: h.runtime.redis,
        keys: h.runtime.keys,
        owner: 'resume-wait',
        log: h.logger,
      },
      { windowJobs: 10, preferred: true },
    );
    feeder.start();
    // Every task searched (the feeder fed the second window) while no store role commits: the
    // first window's events wait in the store queue.
    const answered = () => h!.sandbox.ledger().teams.sandbox?.calls['200'] ?? 0;
    await waitFor(`${TASKS} calls answered`, answered, { until: (n) => n >= TASKS });
    await h.startPool({ roles: ['store'] });
    const final = await waitForRun(h.runtime, runId, { pollMs: 50 });
    await waitForSearchesEnded(h, runId);
    expect(final).toMatchObject({ status: 'completed', done: TASKS });
    const team = h.sandbox.ledger().teams.sandbox!;
    expect(team.calls['200']).toBe(TASKS);
  }, 60_000);

  it('resumed again and again while a store role feeds it: no task is searched twice', async () => {
    h = await startHarness({
      sandbox: { latency: { minMs: 1, maxMs: 10 } },
      env: { HARVEST_QUEUE_WINDOW: '10' },
    });
    const tasks = 600;
    const values = Array.from({ length: tasks }, (_, i) => i).join(', ');
    const file = h.writePipeline(
      'again',
      `name: again\nsearches:\n  - matrix:\n      n: [${values}]\n    query: "again {n}"\n    limit: 2\n`,
    );
    const { runId } = await startRun(h.runtime, file, { logger: h.logger });
    const pool = async (roles: Array<'search' | 'store'>) => {
      const started = await startLocalPool(h!.settings, {
        roles,
        concurrency: 8,
        ...(roles.includes('store') ? { store: h!.runtime.store } : {}),
        logger: h!.logger,
        feeder: { pollMs: 20 },
      });
      pools.push(started);
    };
    // Search workers apart from the store role: records go through the store queue.
    await pool(['store']);
    await pool(['search']);
    await pool(['search']);
    for (let resumes = 0; resumes < 25; resumes++) {
      // A fixed pace: the resumes are spread over the run, whatever its feeding is doing.
      await sleep(150);
      if (h.runtime.store.runs.get(runId)?.status !== 'running') break;
      await resumeRun(h.runtime, runId, { logger: h.logger });
    }
    const final = await waitForRun(h.runtime, runId, { pollMs: 50 });
    expect(final.status).toBe('completed');
    await waitForSearchesEnded(h, runId);
    await waitForDrained(h!.runtime.storeQueue);
    expect(h.runtime.store.calls.summary(runId).byOutcome.ok).toBe(tasks);
    expect(h.sandbox.ledger().teams.sandbox?.calls['200']).toBe(tasks);
  }, 120_000);

  it('a resume that fails midway leaves the run fed: every task still ends', async () => {
    h = await startHarness({
      sandbox: { latency: { minMs: 1, maxMs: 5 } },
      env: { HARVEST_QUEUE_WINDOW: '10' },
    });
    const { runId } = await startRun(h.runtime, h.writePipeline('fed', PIPELINE), {
      logger: h.logger,
    });
    const feed = new FeedState(h.runtime.redis, h.runtime.keys);
    expect(await feed.get(runId)).toBeDefined();
    // A disk error reading SQLite during the resume, once its feed entry is gone.
    const calls = h.runtime.store.calls;
    const totals = calls.totals.bind(calls);
    let fail = true;
    calls.totals = (id: string) => {
      if (!fail) return totals(id);
      fail = false;
      throw Object.assign(new Error('disk I/O error'), { code: 'SQLITE_IOERR' });
    };
    await expect(resumeRun(h.runtime, runId, { logger: h.logger })).rejects.toThrow(/disk I\/O/);
    expect(await feed.get(runId)).toBeDefined();
    await h.startPool({ roles: ['search', 'store'], concurrency: 8 });
    const final = await waitForRun(h.runtime, runId, { pollMs: 50 });
    expect(final).toMatchObject({ status: 'completed', done: TASKS });
  }, 40_000);
});
