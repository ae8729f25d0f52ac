import { describe, expect, it } from 'vitest';
import { callEvent, resultsEvent, seedRun, taskEvent, useTempStores, webItem } from './helpers.ts';

const T0 = Date.UTC(2025, 0, 2, 9);
const DAY_MS = 86_400_000;

describe('pipelines and runs', () => {
  const stores = useTempStores();

  it('pipelines.upsert returns the same id for the same name and hash', () => {
    const store = stores.open();
    const a = store.pipelines.upsert({ name: 'p', hash: 'h1', yamlText: 'x' });
    const b = store.pipelines.upsert({ name: 'p', hash: 'h1', yamlText: 'x' });
    const c = store.pipelines.upsert({ name: 'p', hash: 'h2', yamlText: 'y' });
    expect(b).toBe(a);
    expect(c).not.toBe(a);
    expect(store.pipelines.get(c)).toMatchObject({ name: 'p', hash: 'h2', yamlText: 'y' });
    expect(store.pipelines.latestByName('p')?.id).toBe(c);
  });

  it('creates, lists and moves runs through their statuses', () => {
    let now = T0;
    const store = stores.open({ now: () => now });
    const pipelineId = store.pipelines.upsert({ name: 'p', hash: 'h', yamlText: 'x' });
    const run = store.runs.create({
      id: 'r1',
      pipelineId,
      trigger: 'schedule',
      maxCredits: 100,
      taskCount: 2,
    });
    expect(run).toEqual({
      id: 'r1',
      pipelineId,
      pipelineName: 'p',
      pipelineHash: 'h',
      status: 'queued',
      pausedReason: null,
      trigger: 'schedule',
      maxCredits: 100,
      taskCount: 2,
      createdAt: T0,
      startedAt: null,
      finishedAt: null,
    });
    expect(() =>
      store.runs.create({ id: 'r1', pipelineId, trigger: 'manual', taskCount: 0 }),
    ).toThrow(expect.objectContaining({ code: 'RUN_EXISTS' }));
    now = T0 + 1;
    store.runs.create({ id: 'r2', pipelineId, trigger: 'manual', taskCount: 0 });
    expect(store.runs.latest()?.id).toBe('r2');
    expect(store.runs.list({ limit: 5 }).map((r) => r.id)).toEqual(['r2', 'r1']);
    expect(store.runs.list({ pipelineName: 'nope' })).toEqual([]);

    now = T0 + 10;
    store.runs.setStatus('r1', 'running');
    now = T0 + 20;
    store.runs.setStatus('r1', 'paused', { reason: 'API key rejected (401)' });
    expect(store.runs.get('r1')).toMatchObject({
      status: 'paused',
      pausedReason: 'API key rejected (401)',
      startedAt: T0 + 10,
    });
    now = T0 + 30;
    store.runs.setStatus('r1', 'running');
    now = T0 + 40;
    store.runs.setStatus('r1', 'cancelled');
    expect(store.runs.get('r1')).toMatchObject({
      status: 'cancelled',
      pausedReason: null,
      startedAt: T0 + 10,
      finishedAt: T0 + 40,
    });
    expect(store.runs.setStatus('missing', 'running')).toBe(false);
  });

  it('setTaskCount sets the task count of an existing run only', () => {
    const store = stores.open({ now: () => T0 });
    const pipelineId = store.pipelines.upsert({ name: 'p', hash: 'h', yamlText: 'x' });
    store.runs.create({ id: 'r1', pipelineId, trigger: 'manual', taskCount: 0 });
    store.runs.create({ id: 'r2', pipelineId, trigger: 'manual', taskCount: 7 });
    expect(store.runs.setTaskCount('r1', 100_000)).toBe(true);
    expect(store.runs.get('r1')?.taskCount).toBe(100_000);
    expect(store.runs.get('r2')?.taskCount).toBe(7);
    expect(store.runs.setTaskCount('missing', 1)).toBe(false);
  });

  it('finishIfDone completes a run once no task is active (applyEvents calls it with the task moves)', () => {
    const store = stores.open({ now: () => T0 });
    const { runId } = seedRun(store, { taskCount: 2 });
    expect(store.runs.finishIfDone(runId)).toBeNull();
    store.applyEvents([taskEvent(runId, 't0', 'done', T0 + 1)]);
    expect(store.runs.get(runId)?.status).toBe('running');
    store.applyEvents([taskEvent(runId, 't1', 'failed', T0 + 2, { errorCode: 'BAD_REQUEST' })]);
    expect(store.runs.get(runId)).toMatchObject({ status: 'completed', finishedAt: T0 });
    expect(store.runs.finishIfDone(runId)).toBeNull();

    const all = seedRun(store, { taskCount: 1 });
    store.applyEvents([taskEvent(all.runId, 't0', 'failed', T0 + 1)]);
    expect(store.runs.get(all.runId)?.status).toBe('failed');

    const paused = seedRun(store, { taskCount: 1 });
    store.runs.setStatus(paused.runId, 'paused', { reason: 'payment required' });
    store.applyEvents([taskEvent(paused.runId, 't0', 'done', T0 + 1)]);
    expect(store.runs.get(paused.runId)?.status).toBe('paused');
    expect(store.runs.finishIfDone(paused.runId)).toBeNull();
  });
});

describe('status and cost reports', () => {
  const stores = useTempStores();

  it('runStatus joins tasks, calls, results and errors', () => {
    const store = stores.open({ now: () => T0 });
    const { runId } = seedRun(store, { taskCount: 4, maxCredits: 10 });
    store.applyEvents([
      taskEvent(runId, 't0', 'running', T0 + 1),
      callEvent(runId, 't0', { creditsUsed: 4, startedAt: T0 + 1 }),
      resultsEvent(runId, 't0', [webItem(1), webItem(2)]),
      taskEvent(runId, 't0', 'done', T0 + 2),
      callEvent(runId, 't1', {
        outcome: 'TIMEOUT',
        status: 408,
        creditsUsed: null,
        errorMessage: 'Request timed out',
        startedAt: T0 + 3,
      }),
      taskEvent(runId, 't1', 'retrying', T0 + 3, { errorCode: 'TIMEOUT' }),
      callEvent(runId, 't2', {
        outcome: 'BAD_REQUEST',
        status: 400,
        creditsUsed: 0,
        errorMessage: 'Bad Request',
        startedAt: T0 + 4,
      }),
      taskEvent(runId, 't2', 'failed', T0 + 4, { errorCode: 'BAD_REQUEST' }),
    ]);
    const status = store.runStatus(runId);
    expect(status).toMatchObject({
      run: { id: runId, status: 'running', maxCredits: 10 },
      tasks: { queued: 1, running: 0, retrying: 1, done: 1, failed: 1, total: 4 },
      calls: {
        calls: 3,
        creditsUsed: 4,
        byOutcome: { ok: 1, TIMEOUT: 1, BAD_REQUEST: 1 },
        unknownCostCalls: 1,
      },
      results: 2,
      newUrls: 2,
      creditsRemaining: 6,
      errors: {
        callsByCode: { TIMEOUT: 1, BAD_REQUEST: 1 },
        failedTasksByCode: { BAD_REQUEST: 1 },
      },
    });
    expect(status?.errors.recent.map((e) => [e.taskKey, e.outcome, e.errorMessage])).toEqual([
      ['t2', 'BAD_REQUEST', 'Bad Request'],
      ['t1', 'TIMEOUT', 'Request timed out'],
    ]);
    expect(store.runStatus('missing')).toBeUndefined();
  });

  it('creditsByRun, creditsByDay and creditsByPipeline sum calls', () => {
    let now = T0;
    const store = stores.open({ now: () => now });
    const a = seedRun(store, { runId: 'a' });
    now = T0 + 1;
    const b = seedRun(store, { runId: 'b', pipeline: 'other' });
    now = T0 + 2;
    seedRun(store, { runId: 'empty' });
    store.applyEvents([
      callEvent(a.runId, 't0', { creditsUsed: 2, startedAt: T0 }),
      callEvent(a.runId, 't1', { creditsUsed: 3, startedAt: T0 + DAY_MS }),
      callEvent(a.runId, 't2', { creditsUsed: null, outcome: 'NETWORK', startedAt: T0 + DAY_MS }),
      callEvent(b.runId, 't0', { creditsUsed: 7, startedAt: T0 + DAY_MS }),
    ]);
    expect(store.creditsByRun()).toEqual([
      {
        runId: 'empty',
        pipelineName: 'news-watch',
        status: 'running',
        createdAt: T0 + 2,
        calls: 0,
        creditsUsed: 0,
        unknownCostCalls: 0,
      },
      {
        runId: 'b',
        pipelineName: 'other',
        status: 'running',
        createdAt: T0 + 1,
        calls: 1,
        creditsUsed: 7,
        unknownCostCalls: 0,
      },
      {
        runId: 'a',
        pipelineName: 'news-watch',
        status: 'running',
        createdAt: T0,
        calls: 3,
        creditsUsed: 5,
        unknownCostCalls: 1,
      },
    ]);
    expect(store.creditsByRun({ pipelineName: 'other', limit: 1 }).map((r) => r.runId)).toEqual([
      'b',
    ]);
    expect(store.creditsByDay()).toEqual([
      { day: '2025-01-02', calls: 1, creditsUsed: 2, unknownCostCalls: 0 },
      { day: '2025-01-03', calls: 3, creditsUsed: 10, unknownCostCalls: 1 },
    ]);
    expect(store.creditsByDay({ sinceMs: T0 + 1 })).toHaveLength(1);
    expect(store.creditsByPipeline()).toEqual([
      { pipelineName: 'news-watch', runs: 1, calls: 3, creditsUsed: 5, unknownCostCalls: 1 },
      { pipelineName: 'other', runs: 1, calls: 1, creditsUsed: 7, unknownCostCalls: 0 },
    ]);
  });
});
