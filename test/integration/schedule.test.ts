/**
 * Scheduled runs on real parts: BullMQ job schedulers with seconds-level crons on a fresh Redis
 * prefix, a pool with the runs role, the sandbox on port 0, a temp SQLite file.
 */
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { startLocalPool } from '../../jobs/local.ts';
import { pipelineTextHash } from '../../src/pipeline/keys.ts';
import { missedTickJobId, RUNS_JOBS } from '../../src/queue/names.ts';
import { loadValidPipeline, startRun } from '../../src/run/start.ts';
import { waitForRun } from '../../src/run/wait.ts';
import { readSchedules } from '../../src/schedule/schedulers.ts';
import { runTick } from '../../src/schedule/tick.ts';
import type { TickRow } from '../../src/store/index.ts';
import { useCleanup } from '../helpers/cleanup.ts';
import { type Harness, startHarness } from '../helpers/harness.ts';
import { applySchedule, runsQueue, waitForTicks } from '../helpers/schedule.ts';

const defer = useCleanup();

async function harness(options: Parameters<typeof startHarness>[0] = {}): Promise<Harness> {
  const h = await startHarness(options);
  defer(() => h.stop());
  return h;
}

function pipeline(name: string, cron: string): string {
  return `name: ${name}
searches:
  - query: "scheduled harvesting {n}"
    limit: 3
    matrix:
      n: [1, 2]
schedule:
  cron: "${cron}"
  tz: Europe/Berlin
`;
}

const started = (ticks: TickRow[]) => ticks.filter((t) => t.outcome === 'started');

describe('scheduled runs', () => {
  it('start a run at each tick, on time, with trigger schedule, and the runs land in the store', async () => {
    const h = await harness();
    const queue = runsQueue(h);
    defer(() => queue.close());
    await h.startPool({ roles: ['search', 'store', 'runs'], runs: { pollMs: 200 } });
    await applySchedule(queue, h.writePipeline('every-2s', pipeline('every-2s', '*/2 * * * * *')));

    const ticks = await waitForTicks(h, 'every-2s', (t) => started(t).length >= 3);
    const store = h.runtime.store;
    for (const tick of started(ticks)) {
      expect(tick.dueAt % 2000).toBe(0);
      // Taken within a second or so of its cron time (the machine is shared).
      expect(tick.takenAt - tick.dueAt).toBeLessThan(1500);
      const run = store.runs.get(tick.runId as string);
      expect(run).toMatchObject({ trigger: 'schedule', pipelineName: 'every-2s', taskCount: 2 });
      expect((run?.createdAt ?? 0) - tick.dueAt).toBeLessThan(2000);
      const final = await waitForRun(h.runtime, tick.runId as string, { pollMs: 50 });
      expect(final).toMatchObject({ status: 'completed', done: 2 });
      expect(store.results.count(tick.runId as string)).toBe(6);
    }
    const dues = started(ticks).map((t) => t.dueAt);
    expect(new Set(dues).size).toBe(dues.length);
    // Same queries, same results: only the first run's URLs are new to the pipeline.
    const [first, second] = started(ticks).map((t) => store.runStatus(t.runId as string));
    expect(first?.newUrls).toBe(6);
    expect(second?.newUrls).toBe(0);
  });

  it('skips a tick while the previous run is still going, instead of stacking runs', async () => {
    // Each search takes 2.5 s; the schedule ticks every second.
    const h = await harness({ sandbox: { latency: { minMs: 2500, maxMs: 2500 } } });
    const queue = runsQueue(h);
    defer(() => queue.close());
    await h.startPool({ roles: ['search', 'store', 'runs'], runs: { pollMs: 200 } });
    await applySchedule(queue, h.writePipeline('slow', pipeline('slow', '* * * * * *')));

    const ticks = await waitForTicks(h, 'slow', (t) => started(t).length >= 2, 30_000);
    await queue.removeJobScheduler('slow');
    const skipped = ticks.filter((t) => t.outcome === 'skipped');
    expect(skipped.length).toBeGreaterThanOrEqual(1);
    const [a, b] = started(ticks);
    for (const s of skipped.filter((t) => t.dueAt < (b?.dueAt ?? 0))) {
      expect(s.runId).toBe(a?.runId);
      expect(s.reason).toMatch(new RegExp(`previous run ${a?.runId} is still (queued|running)`));
    }
    const store = h.runtime.store;
    const runA = store.runs.get(a?.runId as string);
    const runB = store.runs.get(b?.runId as string);
    expect(runA?.finishedAt).not.toBeNull();
    // The next run began only after the previous one had finished.
    expect(runB?.createdAt).toBeGreaterThanOrEqual(runA?.finishedAt as number);
    expect(store.runs.list({ pipelineName: 'slow' }).length).toBe(started(ticks).length);
  });

  it('runs once when a worker starts after ticks were missed, then keeps time', async () => {
    const h = await harness();
    const queue = runsQueue(h);
    defer(() => queue.close());
    await applySchedule(queue, h.writePipeline('missed', pipeline('missed', '* * * * * *')));
    // A fixed duration: the test is about ticks falling due (three or four) with no worker.
    await sleep(3500);
    const poolStartedAt = Date.now();
    await h.startPool({ roles: ['search', 'store', 'runs'], runs: { pollMs: 200 } });
    const ticks = await waitForTicks(h, 'missed', (t) => t.length >= 3);
    await queue.removeJobScheduler('missed');
    const late = ticks.filter((t) => t.dueAt < poolStartedAt - 1000);
    expect(late).toHaveLength(1);
    expect(late[0]?.outcome).toBe('started');
    // The missed ticks became one run; the ones after it are due after the worker started.
    expect(ticks.slice(1).every((t) => t.dueAt > poolStartedAt)).toBe(true);
  });

  it('a tick due while no worker took it survives re-applying the changed pipeline, and runs it as applied', async () => {
    const h = await harness();
    const queue = runsQueue(h);
    defer(() => queue.close());
    // Once a minute, 2 s from now.
    const second = new Date(Date.now() + 2000).getUTCSeconds();
    await applySchedule(
      queue,
      h.writePipeline('edited', pipeline('edited', `${second} * * * * *`)),
    );
    // A fixed duration: the test is about a tick that fell due (2 s from now) with no worker.
    await sleep(3500);
    const [before] = await readSchedules(queue);
    expect(before?.next).toBeLessThan(Date.now());
    // The file changes (a comment) and is applied again before any worker took the tick.
    const edited = h.writePipeline(
      'edited',
      `# edited\n${pipeline('edited', `${second} * * * * *`)}`,
    );
    await applySchedule(queue, edited);
    await h.startPool({ roles: ['search', 'store', 'runs'], runs: { pollMs: 200 } });
    // Once its run has started: a tick is `starting` while its run is recorded.
    const [tick] = await waitForTicks(
      h,
      'edited',
      (t) => t.length >= 1 && t[0]?.outcome !== 'starting',
    );
    await queue.removeJobScheduler('edited');
    expect(tick).toMatchObject({ dueAt: before!.next, outcome: 'started' });
    expect(tick!.pipelineHash).toBe(pipelineTextHash(readFileSync(edited, 'utf8')));
  });

  it('a tick waiting to be tried again when its schedule is removed starts no run', async () => {
    const h = await harness();
    const queue = runsQueue(h);
    defer(() => queue.close());
    await applySchedule(queue, h.writePipeline('gone', pipeline('gone', '0 0 6 1 1 *')));
    const [schedule] = await readSchedules(queue);
    // A tick that failed once (a locked database) waits for its retry; meanwhile the user
    // removes the schedule, which takes only the scheduler's next tick with it.
    const dueAt = Date.now() - 1000;
    await queue.add(
      'tick',
      { pipelineName: 'gone', yamlText: schedule!.yamlText, pipelineHash: schedule!.hash, dueAt },
      { jobId: `retry-gone-${dueAt}`, delay: 300 },
    );
    expect(await queue.removeJobScheduler('gone')).toBe(true);
    await h.startPool({ roles: ['search', 'store', 'runs'], runs: { pollMs: 200 } });
    const [tick] = await waitForTicks(h, 'gone', (t) => t.length >= 1);
    expect(tick).toMatchObject({
      outcome: 'skipped',
      runId: null,
      reason: 'its schedule was removed before the tick could start a run',
    });
    expect(h.runtime.store.runs.list({ pipelineName: 'gone' })).toEqual([]);
  });

  it('a missed tick that fails for good is recorded failed under its due time, and holds nothing back', async () => {
    const h = await harness();
    const queue = runsQueue(h);
    defer(() => queue.close());
    await applySchedule(queue, h.writePipeline('flaky', pipeline('flaky', '0 0 6 1 1 *')));
    const [schedule] = await readSchedules(queue);
    // A missed tick as `schedule apply` queues it (its due time in its data), with one attempt
    // left, met by a database locked while the run is recorded.
    const dueAt = Date.now() - 60_000;
    await queue.add(
      'tick',
      { pipelineName: 'flaky', yamlText: schedule!.yamlText, pipelineHash: schedule!.hash, dueAt },
      { jobId: missedTickJobId('flaky', dueAt), attempts: 1 },
    );
    const store = h.runtime.store;
    const lockedRuns = new Proxy(store.runs, {
      get(target, key) {
        if (key === 'create') {
          return () => {
            throw new Error('database is locked');
          };
        }
        const value = Reflect.get(target, key);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const locked = new Proxy(store, {
      get(target, key) {
        if (key === 'runs') return lockedRuns;
        const value = Reflect.get(target, key);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const pool = await startLocalPool(h.settings, {
      roles: ['runs'],
      store: locked,
      logger: h.logger,
      runs: { pollMs: 200 },
    });
    defer(() => pool.close());
    // It was recorded under the time the pool took it, and its own row stayed `starting`, so
    // the schedule's next ticks were skipped as "still starting its run" for 15 minutes.
    const [tick] = await waitForTicks(h, 'flaky', (t) => t.some((x) => x.outcome === 'failed'));
    expect(tick).toMatchObject({ dueAt, outcome: 'failed' });
    expect(store.ticks.list('flaky', 10)).toHaveLength(1);
  });

  it('a tick delivered again after its worker died neither starts a second run nor strands the first', async () => {
    const h = await harness();
    const file = h.writePipeline('redelivered', pipeline('redelivered', '0 6 * * *'));
    const text = readFileSync(file, 'utf8');
    const data = {
      pipelineName: 'redelivered',
      yamlText: text,
      pipelineHash: pipelineTextHash(text),
    };
    const store = h.runtime.store;
    await h.startPool({ roles: ['search', 'store'] });

    // Handled, then delivered again (the job's completion was lost): nothing new starts.
    const dueA = Date.UTC(2026, 0, 1, 5);
    const a = await runTick(h.runtime, data, dueA, { logger: h.logger });
    expect(a.outcome).toBe('started');
    await waitForRun(h.runtime, a.runId as string, { pollMs: 50 });
    expect(await runTick(h.runtime, data, dueA, { logger: h.logger })).toEqual(a);

    // Its worker died after recording the run and before enqueuing it: the run waits with no job.
    const dueB = Date.UTC(2026, 0, 2, 5);
    const claim = store.ticks.claim({ ...data, dueAt: dueB, runId: 'tick-b-run' });
    expect(claim.kind).toBe('claimed');
    const aborted = new AbortController();
    aborted.abort();
    await startRun(h.runtime, await loadValidPipeline(file), {
      trigger: 'schedule',
      runId: 'tick-b-run',
      logger: h.logger,
      signal: aborted.signal,
    });
    expect(await h.runtime.searchQueue.getWaitingCount()).toBe(0);
    const b = await runTick(h.runtime, data, dueB, { logger: h.logger });
    expect(b).toMatchObject({ outcome: 'started', runId: 'tick-b-run' });
    const final = await waitForRun(h.runtime, 'tick-b-run', { pollMs: 50 });
    expect(final).toMatchObject({ status: 'completed', done: 2 });
    expect(
      store.runs
        .list({ pipelineName: 'redelivered' })
        .map((r) => r.id)
        .sort(),
    ).toEqual([a.runId, 'tick-b-run'].sort());
  });

  it('a tick taken the day before a change of the clocks cron-parser cannot cross schedules the next one', async () => {
    // Daily at 02:00 on Lord Howe Island, whose clocks go back 30 minutes on 4 April 2027:
    // from the tick of 3 April, cron-parser throws, and BullMQ's own strategy ends the scheduler.
    const h = await harness();
    const queue = runsQueue(h);
    defer(() => queue.close());
    const file = h.writePipeline('lord-howe', pipeline('lord-howe', '0 2 * * *'));
    const { text } = await loadValidPipeline(file);
    const tz = 'Australia/Lord_Howe';
    await queue.upsertJobScheduler(
      'lord-howe',
      { pattern: '0 2 * * *', tz, startDate: Date.UTC(2027, 3, 2, 14) },
      {
        name: RUNS_JOBS.tick,
        data: {
          pipelineName: 'lord-howe',
          yamlText: text,
          pipelineHash: pipelineTextHash(text),
          file,
        },
      },
    );
    const tick = Date.UTC(2027, 3, 2, 15); // Sat 3 April 02:00 +11:00
    expect((await queue.getJobScheduler('lord-howe'))?.next).toBe(tick);
    // Due now: the runs role takes it, and schedules the tick after it as it does.
    const [job] = await queue.getJobs(['delayed']);
    await job?.promote();
    await h.startPool({ roles: ['search', 'store', 'runs'], runs: { pollMs: 200 } });
    await waitForTicks(h, 'lord-howe', (t) => started(t).length >= 1);
    // Sun 4 April 02:00 +10:30.
    expect((await queue.getJobScheduler('lord-howe'))?.next).toBe(Date.UTC(2027, 3, 3, 15, 30));
  });
});
