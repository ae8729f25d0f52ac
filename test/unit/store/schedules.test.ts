import Sqlite from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import type { Store } from '../../../src/store/index.ts';
import { STALE_STARTING_MS } from '../../../src/store/schedule-ticks.ts';
import { useTempStores } from './helpers.ts';

const stores = useTempStores();
const T0 = Date.UTC(2026, 10, 23, 5, 0, 0);

function clockedStore(): { store: Store; at(ms: number): void } {
  let now = T0;
  const store = stores.open({ now: () => now });
  return { store, at: (ms) => (now = ms) };
}

function addRun(store: Store, id: string, pipeline = 'daily'): void {
  const pipelineId = store.pipelines.upsert({ name: pipeline, hash: 'h', yamlText: 'y' });
  store.runs.create({ id, pipelineId, trigger: 'schedule', maxCredits: null, taskCount: 1 });
}

const claimOf = (dueAt: number, runId: string) => ({
  pipelineName: 'daily',
  dueAt,
  pipelineHash: 'h',
  runId,
});

describe('schedule ticks', () => {
  it('claim a tick once: a redelivered job finds its own claim or its outcome', () => {
    const { store } = clockedStore();
    const first = store.ticks.claim(claimOf(T0, 'run-1'));
    expect(first).toMatchObject({
      kind: 'claimed',
      redelivered: false,
      tick: { outcome: 'starting', runId: 'run-1', takenAt: T0 },
    });
    // The same tick again (its worker died): the same run id, not a new one.
    expect(store.ticks.claim(claimOf(T0, 'run-other'))).toMatchObject({
      kind: 'claimed',
      redelivered: true,
      tick: { runId: 'run-1' },
    });
    store.ticks.finish('daily', T0, 'started');
    expect(store.ticks.claim(claimOf(T0, 'run-other'))).toMatchObject({
      kind: 'done',
      tick: { outcome: 'started', runId: 'run-1' },
    });
  });

  it('skip a tick while a run of the pipeline is still going, naming that run', () => {
    const { store, at } = clockedStore();
    addRun(store, 'run-1');
    store.runs.setStatus('run-1', 'running');
    at(T0 + 60_000);
    expect(store.ticks.claim(claimOf(T0 + 60_000, 'run-2'))).toMatchObject({
      kind: 'skipped',
      tick: {
        outcome: 'skipped',
        runId: 'run-1',
        reason: 'the previous run run-1 is still running',
      },
    });
    // Another pipeline is not held back.
    expect(
      store.ticks.claim({ ...claimOf(T0 + 60_000, 'run-3'), pipelineName: 'weekly' }).kind,
    ).toBe('claimed');
    // Once it has finished (or was interrupted by its user), the next tick starts a run.
    store.runs.setStatus('run-1', 'interrupted');
    expect(store.ticks.claim(claimOf(T0 + 120_000, 'run-4')).kind).toBe('claimed');
  });

  it('skip a tick while another tick is still starting its run, unless that one is stale', () => {
    const { store, at } = clockedStore();
    expect(store.ticks.claim(claimOf(T0, 'run-1')).kind).toBe('claimed');
    at(T0 + 1000);
    expect(store.ticks.claim(claimOf(T0 + 1000, 'run-2'))).toMatchObject({
      kind: 'skipped',
      tick: { runId: 'run-1', reason: expect.stringContaining('is still starting its run') },
    });
    at(T0 + STALE_STARTING_MS + 1);
    expect(store.ticks.claim(claimOf(T0 + 2000, 'run-3')).kind).toBe('claimed');
  });

  it('record a failed tick with its reason, and list ticks newest first', () => {
    const { store } = clockedStore();
    store.ticks.claim(claimOf(T0, 'run-1'));
    store.ticks.finish('daily', T0, 'failed', 'the scheduled pipeline no longer validates');
    store.ticks.claim(claimOf(T0 + 1000, 'run-2'));
    expect(store.ticks.list('daily').map((t) => [t.dueAt, t.outcome, t.reason])).toEqual([
      [T0 + 1000, 'starting', null],
      [T0, 'failed', 'the scheduled pipeline no longer validates'],
    ]);
    // Only a claimed tick is finished: an outcome is never overwritten.
    store.ticks.finish('daily', T0, 'started');
    expect(store.ticks.get('daily', T0)?.outcome).toBe('failed');
  });
});

describe('notifications', () => {
  it('fall due once their run has finished, and leave the due list once delivered', () => {
    const { store, at } = clockedStore();
    addRun(store, 'run-1');
    store.notifications.ensure('run-1', 'https://hooks.example/a');
    store.notifications.ensure('run-1', 'https://hooks.example/changed');
    expect(store.notifications.get('run-1')).toMatchObject({
      url: 'https://hooks.example/a',
      state: 'pending',
      attempts: 0,
    });
    expect(store.notifications.due()).toEqual([]);
    store.runs.setStatus('run-1', 'running');
    expect(store.notifications.due()).toEqual([]);
    store.runs.setStatus('run-1', 'completed');
    expect(store.notifications.due()).toEqual(['run-1']);

    at(T0 + 10);
    const n1 = store.notifications.recordAttempt({
      runId: 'run-1',
      at: T0 + 5,
      durationMs: 12.4,
      status: 500,
      error: 'the receiver answered 500',
      state: 'pending',
    });
    at(T0 + 20);
    const n2 = store.notifications.recordAttempt({
      runId: 'run-1',
      at: T0 + 15,
      durationMs: 3,
      status: 204,
      error: null,
      state: 'delivered',
    });
    expect([n1, n2]).toEqual([1, 2]);
    expect(store.notifications.get('run-1')).toMatchObject({
      state: 'delivered',
      attempts: 2,
      lastStatus: 204,
      lastError: null,
      deliveredAt: T0 + 20,
    });
    expect(store.notifications.attempts('run-1')).toEqual([
      {
        runId: 'run-1',
        attempt: 1,
        at: T0 + 5,
        durationMs: 12,
        status: 500,
        error: 'the receiver answered 500',
      },
      { runId: 'run-1', attempt: 2, at: T0 + 15, durationMs: 3, status: 204, error: null },
    ]);
    expect(store.notifications.due()).toEqual([]);
    expect(store.runStatus('run-1')?.notification?.state).toBe('delivered');
  });

  it('are due for cancelled and failed runs too, not for interrupted ones', () => {
    const { store } = clockedStore();
    for (const [id, status] of [
      ['run-c', 'cancelled'],
      ['run-f', 'failed'],
      ['run-i', 'interrupted'],
    ] as const) {
      addRun(store, id);
      store.notifications.ensure(id, 'https://hooks.example/a');
      store.runs.setStatus(id, status);
    }
    expect(store.notifications.due().sort()).toEqual(['run-c', 'run-f']);
  });
});

describe('media by status', () => {
  it('counts every status of every run, zero when there is no media yet', () => {
    const { store } = clockedStore();
    expect(store.gauges.mediaByStatus()).toEqual({ pending: 0, saved: 0, failed: 0, expired: 0 });
    const db = new Sqlite(store.path);
    // A run that saves media has its row here first (media.configure); its counts follow the
    // media rows by triggers, and the gauges read them.
    db.prepare(
      `INSERT INTO run_media (run_id, kinds_json, dir, max_bytes, margin_max_ms)
       VALUES ('r', '["screenshot"]', 'media', 1000, 0)`,
    ).run();
    const insert = db.prepare(
      `INSERT INTO media (run_id, task_key, source, position, kind, status, source_url, issued_at,
         deadline_at, updated_at) VALUES ('r', 't', 'web', ?, 'screenshot', ?, 'u', 0, 0, 0)`,
    );
    for (const [i, status] of ['saved', 'saved', 'expired', 'pending'].entries()) {
      insert.run(i, status);
    }
    expect(store.gauges.mediaByStatus()).toEqual({ pending: 1, saved: 2, failed: 0, expired: 1 });
    db.prepare(`UPDATE media SET status = 'failed' WHERE status = 'pending'`).run();
    db.close();
    expect(store.gauges.mediaByStatus()).toEqual({ pending: 0, saved: 2, failed: 1, expired: 1 });
  });
});
