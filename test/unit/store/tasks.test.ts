import { describe, expect, it } from 'vitest';
import { seedRun, taskEvent, useTempStores } from './helpers.ts';

const T0 = Date.UTC(2025, 0, 2, 9);

describe('tasks', () => {
  const stores = useTempStores();

  it('insertMany twice does not double, and keeps the first request', () => {
    const store = stores.open();
    const { runId } = seedRun(store, { taskCount: 0 });
    const tasks = [
      { key: 'a', request: { query: 'alpha' }, searchId: 's1', tags: ['x'] },
      { key: 'b', request: { query: 'beta' } },
    ];
    expect(store.tasks.insertMany(runId, tasks)).toBe(2);
    expect(store.tasks.insertMany(runId, [...tasks, { key: 'c', request: { query: 'c' } }])).toBe(
      1,
    );
    expect(store.tasks.insertMany(runId, [{ key: 'a', request: { query: 'changed' } }])).toBe(0);
    expect(store.tasks.counts(runId)).toEqual({
      queued: 3,
      running: 0,
      retrying: 0,
      done: 0,
      failed: 0,
      total: 3,
    });
    expect(store.tasks.get(runId, 'a')).toMatchObject({
      request: { query: 'alpha' },
      searchId: 's1',
      tags: ['x'],
      status: 'queued',
      attempts: 0,
      creditsUsed: 0,
    });
  });

  it('unfinished lists queued, running and retrying tasks across pages, in key order', () => {
    const store = stores.open({ now: () => T0 });
    const { runId } = seedRun(store, { taskCount: 7 });
    store.applyEvents([
      taskEvent(runId, 't1', 'done', T0 + 1),
      taskEvent(runId, 't3', 'failed', T0 + 1),
      taskEvent(runId, 't4', 'running', T0 + 1),
      taskEvent(runId, 't5', 'retrying', T0 + 1),
    ]);
    const seen: string[] = [];
    for (const task of store.tasks.unfinished(runId, { pageSize: 2 })) {
      seen.push(task.key);
      // The generator holds no statement open, so writing in between is allowed.
      store.runs.setStatus(runId, 'running');
    }
    expect(seen).toEqual(['t0', 't2', 't4', 't5', 't6']);
    const first = store.tasks.unfinished(runId).next();
    expect(first.value).toMatchObject({ key: 't0', request: { query: 'q t0', limit: 2 } });
  });

  it('insertMany of 100,000 tasks completes', () => {
    const store = stores.open();
    const { runId } = seedRun(store, { taskCount: 0 });
    const tasks = Array.from({ length: 100_000 }, (_, i) => ({
      key: `k${String(i).padStart(6, '0')}`,
      request: { query: `query number ${i}`, limit: 10, sources: [{ type: 'web' }] },
      searchId: 'main',
    }));
    expect(store.tasks.insertMany(runId, tasks)).toBe(100_000);
    expect(store.tasks.counts(runId).total).toBe(100_000);
    expect(store.tasks.insertMany(runId, tasks)).toBe(0);
    expect(store.tasks.counts(runId)).toMatchObject({ queued: 100_000, total: 100_000 });
    let n = 0;
    for (const _ of store.tasks.unfinished(runId)) n++;
    expect(n).toBe(100_000);
  });
});
