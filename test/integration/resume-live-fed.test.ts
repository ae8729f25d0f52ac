/**
 * A run larger than the queue window, resumed while its jobs are live, is fed again from its
 * first task (cursor reset to ''): the feeder reads SQLite later, and must not add the tasks
 * whose jobs were live at the resume, some of which complete (leave Redis) while their events
 * still wait in the store queue.
 * Search workers on other hosts (roles search), `harvest run --resume RUN --wait` feeding
 * (preferred feeder, as run-command does), no store role committing yet.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { Feeder } from '../../src/run/feeder.ts';
import { resumeRun, startRun } from '../../src/run/start.ts';
import { waitForRun } from '../../src/run/wait.ts';
import { type Harness, startHarness } from '../helpers/harness.ts';

let h: Harness | undefined;
let feeder: Feeder | undefined;
afterEach(async () => {
  await feeder?.stop();
  feeder = undefined;
  await h?.stop();
  h = undefined;
});

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
    await sleep(100); // the first window (10 jobs) is held by the search workers
    await resumeRun(h.runtime, runId, { logger: h.logger });
    // What `run --resume --wait` starts (src/cli/run-command.ts #startFeeder).
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
    await sleep(1200);
    await h.startPool({ roles: ['store'] });
    const final = await waitForRun(h.runtime, runId, { pollMs: 50 });
    await sleep(1500);
    expect(final).toMatchObject({ status: 'completed', done: TASKS });
    const team = h.sandbox.ledger().teams.sandbox!;
    expect(team.calls['200']).toBe(TASKS);
  }, 60_000);
});
