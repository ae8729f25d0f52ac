/**
 * `harvest run --resume` while workers are taking the run's jobs (the key pause lifted by the
 * same command's probe, a `run --wait` Ctrl-C'd while other workers go on) adds none of the
 * jobs that are in Redis: one that completes after SQLite was read has left Redis (completed
 * search jobs are removed), so its id would no longer stop a second job, and the task would be
 * searched, and billed, twice.
 *
 * In the CLI the time between reading the unfinished tasks and `addBulk` was ~700 ms (a cold
 * process validating each job envelope); here the delay is made explicit around `addBulk`.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { resumeRun } from '../../src/run/resume.ts';
import { startRun } from '../../src/run/start.ts';
import { waitForRun } from '../../src/run/wait.ts';
import { type Harness, startHarness } from '../helpers/harness.ts';
import { unfinishedJobs, waitForDrained } from '../helpers/queues.ts';
import { waitFor } from '../helpers/wait.ts';

let h: Harness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

const TASKS = 20;
const PIPELINE = `name: resume-live
searches:
  - matrix:
      n: [${Array.from({ length: TASKS }, (_, i) => i).join(', ')}]
    query: "resume dup {n}"
    limit: 2
`;

describe('resume during a live run', () => {
  it('a resume never searches (and bills) a task a second time', async () => {
    h = await startHarness({ sandbox: { latency: { minMs: 400, maxMs: 400 } } });
    const file = h.writePipeline('dup', PIPELINE);
    await h.startPool({ concurrency: TASKS });
    const { runId } = await startRun(h.runtime, file, { logger: h.logger });
    // Every call in flight, none answered: SQLite holds every task as unfinished.
    const { redis, keys } = h.runtime;
    await waitFor(`${TASKS} calls journaled`, () => redis.hlen(keys.inflight), {
      until: (n) => n === TASKS,
    });

    // The resume reads SQLite, then adds the jobs; meanwhile the calls in flight end and their
    // jobs complete (and are removed from Redis).
    const queue = h.runtime.searchQueue;
    const addBulk = queue.addBulk.bind(queue);
    queue.addBulk = (async (jobs: Parameters<typeof addBulk>[0]) => {
      await waitFor('the jobs in flight to complete', () => unfinishedJobs(queue), {
        until: (n) => n === 0,
      });
      return addBulk(jobs);
    }) as typeof queue.addBulk;
    await resumeRun(h.runtime, runId, { logger: h.logger });
    queue.addBulk = addBulk;

    const final = await waitForRun(h.runtime, runId, { pollMs: 50 });
    // Jobs the resume added would run after the run completed: every one has ended.
    await waitForDrained(queue);
    expect(final).toMatchObject({ status: 'completed', done: TASKS });
    const team = h.sandbox.ledger().teams.sandbox!;
    const stored = h.runtime.store.calls.summary(runId);
    // What the service billed equals what harvest stored either way; the point is how many.
    expect(stored.creditsUsed).toBe(team.creditsCharged);
    // One search per task: nothing was called, and billed, twice.
    expect(team.calls['200']).toBe(TASKS);
  }, 60_000);
});
