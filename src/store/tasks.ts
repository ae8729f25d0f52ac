/**
 * `tasks`: the planned searches of a run, written before any job exists. Their status follows
 * the task events of the workers, monotonically (see `applyEvent`).
 */
import type { Database } from 'better-sqlite3';
import type { TaskEvent, TaskStatus } from '../events/store.ts';
import type { Clock } from './clock.ts';

export interface TaskInput {
  /** Unique within the run; also part of the job id. */
  key: string;
  /** The search request body, stored as JSON. */
  request: unknown;
  /** Id of the search entry in the pipeline file that produced this task. */
  searchId?: string | null;
  tags?: readonly string[] | Record<string, unknown> | null;
}

export interface UnfinishedTask {
  key: string;
  request: unknown;
  searchId: string | null;
  status: TaskStatus;
  attempts: number;
}

export interface TaskRow extends UnfinishedTask {
  runId: string;
  tags: unknown;
  lastErrorCode: string | null;
  lastErrorMessage: string | null;
  /** Sum of `creditsUsed` of the task's recorded calls. */
  creditsUsed: number;
  /** ms since the epoch of the last applied status change (or of planning). */
  updatedAt: number;
}

export type TaskCounts = Record<TaskStatus, number> & { total: number };

export interface UnfinishedOptions {
  /** Rows read per query; default 1000. The generator holds no statement open between pages. */
  pageSize?: number;
}

export interface TasksTable {
  /**
   * Inserts tasks as `queued` in one transaction, skipping keys the run already has.
   * Returns how many rows were new.
   */
  insertMany(runId: string, tasks: Iterable<TaskInput>): number;
  /**
   * Tasks of the run not `done` or `failed`, in key order. Pages with keyset queries, so the
   * caller may await and use the store between items.
   */
  unfinished(runId: string, options?: UnfinishedOptions): Generator<UnfinishedTask>;
  /**
   * At most `limit` tasks of the run not `done` or `failed` whose key comes after `after`, in
   * key order: one page for the feeder (src/run/feed/feeder.ts).
   */
  unfinishedAfter(runId: string, after: string, limit: number): UnfinishedTask[];
  /** How many tasks of the run are not `done` or `failed` and have a key after `after`. */
  countUnfinishedAfter(runId: string, after: string): number;
  counts(runId: string): TaskCounts;
  /** Failed tasks of the run per last error code (`UNKNOWN` when none was given). */
  failedByCode(runId: string): Record<string, number>;
  get(runId: string, key: string): TaskRow | undefined;
  /**
   * Applies a task event when it moves the task forward: `done` is final; `failed` only gives
   * way to `done`; among queued/running/retrying the later `at` wins (ties: more attempts).
   * Returns false when the event was stale or the task is unknown.
   */
  applyEvent(event: TaskEvent): boolean;
  /** Adds the credits of a newly recorded call to the task's sum. */
  addCredits(runId: string, key: string, credits: number): void;
  /**
   * Puts the run's failed tasks back to `queued` (their last error kept, for the record), to
   * be enqueued again; returns their keys.
   */
  requeueFailed(runId: string): string[];
}

interface RawTaskRow {
  runId: string;
  key: string;
  requestJson: string;
  searchId: string | null;
  tagsJson: string | null;
  status: TaskStatus;
  attempts: number;
  lastErrorCode: string | null;
  lastErrorMessage: string | null;
  creditsUsed: number;
  updatedAt: number;
}

const ACTIVE = `('queued', 'running', 'retrying')`;

/** A page row of unfinished tasks, before its request is parsed. */
interface RawUnfinished {
  key: string;
  requestJson: string;
  searchId: string | null;
  status: TaskStatus;
  attempts: number;
}

/** The statements of the tasks table, prepared once per connection. */
function prepareTaskStatements(db: Database) {
  return {
    insert: db.prepare<[string, string, string, string | null, string | null, number]>(
      `INSERT OR IGNORE INTO tasks (run_id, task_key, request_json, search_id, tags_json, updated_at)
       VALUES (?, ?, ?, ?, ?, ?)`,
    ),
    page: db.prepare<[string, string, number], RawUnfinished>(
      `SELECT task_key AS key, request_json AS requestJson, search_id AS searchId, status, attempts
       FROM tasks
       WHERE run_id = ? AND task_key > ? AND status IN ${ACTIVE}
       ORDER BY task_key LIMIT ?`,
    ),
    countAfter: db
      .prepare<[string, string], number>(
        `SELECT COUNT(*) FROM tasks WHERE run_id = ? AND task_key > ? AND status IN ${ACTIVE}`,
      )
      .pluck(),
    // Kept by triggers (migration 2), so reading them costs the same for any size of run.
    countRow: db.prepare<[string], Record<TaskStatus, number>>(
      'SELECT queued, running, retrying, done, failed FROM run_counts WHERE run_id = ?',
    ),
    failedRows: db.prepare<[string], { code: string; n: number }>(
      `SELECT COALESCE(last_error_code, 'UNKNOWN') AS code, COUNT(*) AS n
       FROM tasks WHERE run_id = ? AND status = 'failed' GROUP BY code`,
    ),
    one: db.prepare<[string, string], RawTaskRow>(
      `SELECT run_id AS runId, task_key AS key, request_json AS requestJson, search_id AS searchId,
              tags_json AS tagsJson, status, attempts, last_error_code AS lastErrorCode,
              last_error_message AS lastErrorMessage, credits_used AS creditsUsed,
              updated_at AS updatedAt
       FROM tasks WHERE run_id = ? AND task_key = ?`,
    ),
    // The rule of `TasksTable.applyEvent`, in its WHERE clause.
    transition: db.prepare<{
      runId: string;
      taskKey: string;
      status: TaskStatus;
      attempts: number;
      errorCode: string | null;
      errorMessage: string | null;
      at: number;
    }>(
      `UPDATE tasks SET
         status = @status,
         attempts = MAX(attempts, @attempts),
         last_error_code = CASE WHEN @status = 'done' THEN NULL
                                ELSE COALESCE(@errorCode, last_error_code) END,
         last_error_message = CASE WHEN @status = 'done' THEN NULL
                                   ELSE COALESCE(@errorMessage, last_error_message) END,
         updated_at = MAX(updated_at, @at)
       WHERE run_id = @runId AND task_key = @taskKey AND (
            (status IN ${ACTIVE} AND @status IN ('done', 'failed'))
         OR (status = 'failed' AND @status = 'done')
         OR (status IN ${ACTIVE} AND @status IN ${ACTIVE} AND (
                 (status = 'queued' AND attempts = 0)
              OR @at > updated_at
              OR (@at = updated_at AND @attempts >= attempts))))`,
    ),
    requeue: db
      .prepare<[number, string], string>(
        `UPDATE tasks SET status = 'queued', updated_at = ?
         WHERE run_id = ? AND status = 'failed' RETURNING task_key`,
      )
      .pluck(),
    credit: db.prepare<[number, string, string]>(
      'UPDATE tasks SET credits_used = credits_used + ? WHERE run_id = ? AND task_key = ?',
    ),
  };
}

type TaskStatements = ReturnType<typeof prepareTaskStatements>;

/** The unfinished tasks of a run, read a page at a time (keyset on the task key). */
function* unfinishedPages(
  page: TaskStatements['page'],
  runId: string,
  options: UnfinishedOptions,
): Generator<UnfinishedTask> {
  const pageSize = options.pageSize ?? 1000;
  let after = '';
  for (;;) {
    const rows = page.all(runId, after, pageSize);
    for (const r of rows) yield unfinishedOf(r);
    const last = rows.at(-1);
    if (!last || rows.length < pageSize) return;
    after = last.key;
  }
}

function taskOf(r: RawTaskRow): TaskRow {
  const { requestJson, tagsJson, ...rest } = r;
  return {
    ...rest,
    request: JSON.parse(requestJson),
    tags: tagsJson === null ? null : JSON.parse(tagsJson),
  };
}

export function createTasksTable(db: Database, now: Clock): TasksTable {
  const s = prepareTaskStatements(db);
  const insertAll = db.transaction((runId: string, tasks: Iterable<TaskInput>): number => {
    const at = now();
    let inserted = 0;
    for (const t of tasks) {
      const tags = t.tags == null ? null : JSON.stringify(t.tags);
      const info = s.insert.run(
        runId,
        t.key,
        JSON.stringify(t.request),
        t.searchId ?? null,
        tags,
        at,
      );
      inserted += info.changes;
    }
    return inserted;
  });

  return {
    insertMany: (runId, tasks) => insertAll.immediate(runId, tasks),
    unfinished: (runId, options = {}) => unfinishedPages(s.page, runId, options),
    unfinishedAfter: (runId, after, limit) => s.page.all(runId, after, limit).map(unfinishedOf),
    countUnfinishedAfter: (runId, after) => s.countAfter.get(runId, after) ?? 0,
    counts(runId) {
      const c = s.countRow.get(runId) ?? { queued: 0, running: 0, retrying: 0, done: 0, failed: 0 };
      return { ...c, total: c.queued + c.running + c.retrying + c.done + c.failed };
    },
    failedByCode: (runId) => Object.fromEntries(s.failedRows.all(runId).map((r) => [r.code, r.n])),
    get(runId, key) {
      const r = s.one.get(runId, key);
      return r ? taskOf(r) : undefined;
    },
    applyEvent: (e) =>
      s.transition.run({
        runId: e.runId,
        taskKey: e.taskKey,
        status: e.status,
        attempts: e.attempts,
        errorCode: e.errorCode ?? null,
        errorMessage: e.errorMessage ?? null,
        at: e.at,
      }).changes > 0,
    addCredits(runId, key, credits) {
      if (credits !== 0) s.credit.run(credits, runId, key);
    },
    requeueFailed: (runId) => s.requeue.all(now(), runId),
  };
}

function unfinishedOf(r: RawUnfinished): UnfinishedTask {
  return {
    key: r.key,
    request: JSON.parse(r.requestJson),
    searchId: r.searchId,
    status: r.status,
    attempts: r.attempts,
  };
}
