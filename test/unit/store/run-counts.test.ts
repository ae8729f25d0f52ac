import Sqlite from 'better-sqlite3';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  openStore,
  type Store,
  type StoreEvent,
  type TaskStatus,
} from '../../../src/store/index.ts';
import { MIGRATIONS } from '../../../src/store/migrations.ts';
import { callEvent, seedRun, taskEvent, useTempStores } from './helpers.ts';

const STATUSES: TaskStatus[] = ['queued', 'running', 'retrying', 'done', 'failed'];

/** The counters' meaning, computed the slow way. */
function groupBy(file: string, runId: string) {
  const db = new Sqlite(file, { readonly: true });
  try {
    const tasks = Object.fromEntries(STATUSES.map((s) => [s, 0])) as Record<TaskStatus, number>;
    for (const r of db
      .prepare('SELECT status, COUNT(*) AS n FROM tasks WHERE run_id = ? GROUP BY status')
      .all(runId) as { status: TaskStatus; n: number }[])
      tasks[r.status] = r.n;
    const calls = db
      .prepare(
        `SELECT COUNT(*) AS calls, COALESCE(SUM(credits_used), 0) AS creditsUsed,
                COALESCE(SUM(credits_used IS NULL), 0) AS unknownCostCalls
         FROM calls WHERE run_id = ?`,
      )
      .get(runId);
    return { tasks: { ...tasks, total: STATUSES.reduce((n, s) => n + tasks[s], 0) }, calls };
  } finally {
    db.close();
  }
}

function counters(store: Store, runId: string) {
  return { tasks: store.tasks.counts(runId), calls: store.calls.totals(runId) };
}

describe('run counters', () => {
  const stores = useTempStores();

  it('match GROUP BY over tasks and calls after any sequence of events, redeliveries included', () => {
    const store = stores.open();
    const event = fc.oneof(
      fc.record({
        kind: fc.constant('task' as const),
        task: fc.integer({ min: 0, max: 5 }),
        status: fc.constantFrom(...STATUSES),
        at: fc.integer({ min: 0, max: 50 }),
        attempts: fc.integer({ min: 1, max: 4 }),
      }),
      fc.record({
        kind: fc.constant('call' as const),
        task: fc.integer({ min: 0, max: 5 }),
        credits: fc.option(fc.integer({ min: 0, max: 9 })),
        again: fc.boolean(),
      }),
    );
    fc.assert(
      fc.property(fc.array(fc.array(event, { maxLength: 8 }), { maxLength: 6 }), (batches) => {
        const { runId } = seedRun(store, { taskCount: 5 });
        let lastCall: ReturnType<typeof callEvent> | undefined;
        for (const batch of batches) {
          store.applyEvents(
            batch.flatMap((e): StoreEvent[] => {
              if (e.kind === 'task')
                return [
                  taskEvent(runId, `t${e.task}`, e.status, 1_000 + e.at, { attempts: e.attempts }),
                ];
              const call =
                e.again && lastCall
                  ? lastCall
                  : callEvent(runId, `t${e.task}`, { creditsUsed: e.credits });
              lastCall = call;
              return [call];
            }),
          );
          expect(counters(store, runId)).toEqual(groupBy(store.path, runId));
        }
      }),
      { numRuns: 60 },
    );
  });

  it('count new tasks only once, and read zero for an unknown run', () => {
    const store = stores.open();
    const { runId } = seedRun(store, { taskCount: 3 });
    store.tasks.insertMany(runId, [
      { key: 't0', request: {} },
      { key: 'extra', request: {} },
    ]);
    expect(store.tasks.counts(runId)).toMatchObject({ queued: 4, total: 4 });
    expect(counters(store, 'no-such-run')).toEqual({
      tasks: { queued: 0, running: 0, retrying: 0, done: 0, failed: 0, total: 0 },
      calls: { calls: 0, creditsUsed: 0, unknownCostCalls: 0 },
    });
  });

  it('are filled in from the rows already there when a version 1 database is migrated', () => {
    const file = `${stores.dir()}/v1.db`;
    const raw = new Sqlite(file);
    raw.exec(MIGRATIONS[0] ?? '');
    raw.pragma('user_version = 1');
    raw.exec(`
      INSERT INTO pipelines (id, name, hash, yaml_text, created_at) VALUES (1, 'p', 'h', 'name: p', 0);
      INSERT INTO runs (id, pipeline_id, trigger, task_count, created_at) VALUES ('r1', 1, 'manual', 3, 0);
      INSERT INTO tasks (run_id, task_key, request_json, status, updated_at) VALUES
        ('r1', 'a', '{}', 'done', 0), ('r1', 'b', '{}', 'failed', 0), ('r1', 'c', '{}', 'queued', 0);
      INSERT INTO calls (call_id, run_id, task_key, attempt, started_at, duration_ms, outcome, credits_used)
      VALUES ('c1', 'r1', 'a', 1, 0, 5, 'ok', 2), ('c2', 'r1', 'b', 1, 0, 5, 'LOST', NULL),
             ('c3', 'gone', 'x', 1, 0, 5, 'ok', 4);
    `);
    raw.close();
    const store = openStore(file);
    try {
      expect(counters(store, 'r1')).toEqual({
        tasks: { queued: 1, running: 0, retrying: 0, done: 1, failed: 1, total: 3 },
        calls: { calls: 2, creditsUsed: 2, unknownCostCalls: 1 },
      });
      expect(store.calls.totals('gone')).toEqual({
        calls: 1,
        creditsUsed: 4,
        unknownCostCalls: 0,
      });
    } finally {
      store.close();
    }
  });
});
