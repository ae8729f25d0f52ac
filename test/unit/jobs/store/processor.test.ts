import type { Job } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { createStoreProcessor } from '../../../../jobs/store/processor.ts';
import { directWriter } from '../../../../src/store/index.ts';
import { capturedLogger } from '../../../helpers/logger.ts';
import {
  callEvent,
  refuseCallsOf,
  seedRun,
  taskEvent,
  useTempStores,
} from '../../store/helpers.ts';

/** The processor reads only a job's id and data. */
function job(id: string, events: unknown[]): Job {
  return { id, data: { events } } as unknown as Job;
}

const T0 = Date.UTC(2025, 0, 2, 9);

describe('store processor', () => {
  const stores = useTempStores();

  it('holds jobs until every slot is taken, then commits them together, which finishes the run', async () => {
    const store = stores.open();
    const { runId } = seedRun(store, { taskCount: 3 });
    const { logger } = capturedLogger();
    const process = createStoreProcessor(directWriter(store), logger, {
      batchJobs: 3,
      windowMs: 60_000,
    });
    let settled = 0;
    const first = [
      process(job('j1', [callEvent(runId, 't0'), taskEvent(runId, 't0', 'done', T0)])),
      process(job('j2', [callEvent(runId, 't1'), taskEvent(runId, 't1', 'done', T0)])),
    ].map((p) =>
      p.then((r) => {
        settled += 1;
        return r;
      }),
    );
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(settled).toBe(0);
    expect(store.tasks.counts(runId).done).toBe(0);

    const third = process(job('j3', [taskEvent(runId, 't2', 'failed', T0)]));
    expect(await Promise.all([...first, third])).toEqual([
      { applied: 2 },
      { applied: 2 },
      { applied: 1 },
    ]);
    expect(store.tasks.counts(runId)).toMatchObject({ done: 2, failed: 1 });
    expect(store.calls.totals(runId)).toMatchObject({ calls: 2, creditsUsed: 4 });
    expect(store.runs.get(runId)?.status).toBe('completed');
  });

  it('commits a lone job once its window has passed', async () => {
    const store = stores.open();
    const { runId } = seedRun(store, { taskCount: 1 });
    const process = createStoreProcessor(directWriter(store), capturedLogger().logger, {
      batchJobs: 16,
      windowMs: 5,
    });
    expect(await process(job('j1', [taskEvent(runId, 't0', 'running', T0)]))).toEqual({
      applied: 1,
    });
    expect(store.tasks.counts(runId).running).toBe(1);
  });

  it('keeps the events of a run this database lacks, and says so once per run', async () => {
    const store = stores.open();
    const { runId } = seedRun(store, { taskCount: 1 });
    const { logger, lines } = capturedLogger();
    const process = createStoreProcessor(directWriter(store), logger, {
      batchJobs: 1,
      windowMs: 5,
      hasRun: (id) => store.runs.get(id) !== undefined,
      dbPath: store.path,
    });
    await process(job('j1', [callEvent(runId, 't0'), callEvent('elsewhere', 't0')]));
    await process(job('j2', [callEvent('elsewhere', 't1', { startedAt: T0 + 1 })]));
    const warned = lines.filter((l) => l.runId === 'elsewhere');
    expect(warned).toHaveLength(1);
    expect(warned[0]).toMatchObject({ level: 40, db: store.path });
    expect(String(warned[0]?.msg)).toContain('started against another');
    expect(lines.filter((l) => l.runId === runId)).toEqual([]);
    // Kept all the same: nothing the service billed is dropped.
    expect(store.calls.totals('elsewhere').calls).toBe(2);
  });

  it('names rejected events by their job and their index within it', async () => {
    const store = stores.open();
    const { runId } = seedRun(store, { taskCount: 2 });
    const { logger, lines } = capturedLogger();
    const process = createStoreProcessor(directWriter(store), logger, {
      batchJobs: 2,
      windowMs: 60_000,
    });
    const results = await Promise.all([
      process(job('j1', [taskEvent(runId, 't0', 'done', T0), { type: 'task', runId }])),
      process(job('j2', [{ type: 'nonsense' }, taskEvent(runId, 't1', 'done', T0)])),
    ]);
    expect(results).toEqual([{ applied: 1 }, { applied: 1 }]);
    expect(store.tasks.counts(runId).done).toBe(2);
    const rejected = lines.filter((l) => l.msg === 'store events rejected');
    expect(
      rejected.map((l) => [l.jobId, (l.rejected as { index: number }[]).map((r) => r.index)]),
    ).toEqual([
      ['j1', [1]],
      ['j2', [0]],
    ]);
  });

  it('finishes the jobs of one transaction with one call, before they complete', async () => {
    const store = stores.open();
    const { runId } = seedRun(store, { taskCount: 3 });
    const finished: unknown[][] = [];
    let completed = 0;
    const process = createStoreProcessor(directWriter(store), capturedLogger().logger, {
      batchJobs: 3,
      windowMs: 60_000,
      committed: async (events) => {
        expect(completed).toBe(0);
        finished.push([...events]);
      },
    });
    const jobs = ['t0', 't1', 't2'].map((task) =>
      process(job(task, [callEvent(runId, task), taskEvent(runId, task, 'done', T0)])).then((r) => {
        completed += 1;
        return r;
      }),
    );
    await Promise.all(jobs);
    expect(finished.map((events) => events.length)).toEqual([6]);
  });

  it('a finish that fails is logged, and the jobs complete all the same', async () => {
    const store = stores.open();
    const { runId } = seedRun(store, { taskCount: 1 });
    const { logger, lines } = capturedLogger();
    const process = createStoreProcessor(directWriter(store), logger, {
      batchJobs: 1,
      committed: async () => {
        throw new Error('Redis went away');
      },
    });
    expect(await process(job('j1', [taskEvent(runId, 't0', 'done', T0)]))).toEqual({
      applied: 1,
    });
    expect(lines.map((l) => l.msg)).toEqual([
      'could not finish after a commit (job marks, budget settles)',
    ]);
  });

  it('a job the database refuses fails alone; the others of its transaction are committed', async () => {
    const store = stores.open();
    const { runId } = seedRun(store, { taskCount: 2 });
    refuseCallsOf(store.path, 't1');
    const process = createStoreProcessor(directWriter(store), capturedLogger().logger, {
      batchJobs: 2,
      windowMs: 60_000,
    });
    const outcomes = await Promise.allSettled([
      process(job('j1', [taskEvent(runId, 't0', 'done', T0)])),
      process(job('j2', [callEvent(runId, 't1'), taskEvent(runId, 't1', 'done', T0)])),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected']);
    expect(store.tasks.counts(runId)).toMatchObject({ done: 1 });
  });

  it('fails every job of a batch whose transaction fails, so each is retried', async () => {
    const store = stores.open();
    const { runId } = seedRun(store, { taskCount: 2 });
    const process = createStoreProcessor(directWriter(store), capturedLogger().logger, {
      batchJobs: 2,
      windowMs: 60_000,
    });
    store.close();
    const outcomes = await Promise.allSettled([
      process(job('j1', [taskEvent(runId, 't0', 'done', T0)])),
      process(job('j2', [taskEvent(runId, 't1', 'done', T0)])),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'rejected']);
    await expect(process(job('j3', {} as unknown as unknown[]))).rejects.toThrow(
      /carries no events/,
    );
  });
});
