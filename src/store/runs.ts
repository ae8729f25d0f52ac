/**
 * `runs`: one row per execution of a pipeline. A run is created (with its tasks) before any job
 * is enqueued, so the database alone says what a run was meant to do.
 */
import Sqlite, { type Database } from 'better-sqlite3';
import { HarvestError } from '../errors.ts';
import type { Clock } from './clock.ts';

export const RUN_STATUSES = [
  'queued',
  'running',
  'paused',
  'interrupted',
  'completed',
  'failed',
  'cancelled',
] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

/** Statuses after which a run does nothing more unless resumed. */
export const FINISHED_RUN_STATUSES: readonly RunStatus[] = ['completed', 'failed', 'cancelled'];

export const RUN_TRIGGERS = ['manual', 'schedule', 'resume'] as const;
export type RunTrigger = (typeof RUN_TRIGGERS)[number];

export interface RunRow {
  id: string;
  pipelineId: number;
  pipelineName: string;
  pipelineHash: string;
  status: RunStatus;
  /** Why the run is paused (e.g. the API answered 401 or 402); null unless paused. */
  pausedReason: string | null;
  trigger: RunTrigger;
  /** Credit budget of the run; null when unlimited. */
  maxCredits: number | null;
  taskCount: number;
  /** ms since the epoch. */
  createdAt: number;
  /** First time the run became `running`, ms since the epoch. */
  startedAt: number | null;
  /** When the run last reached completed, failed or cancelled, ms since the epoch. */
  finishedAt: number | null;
}

export interface RunInput {
  id: string;
  pipelineId: number;
  trigger: RunTrigger;
  /** Credit budget; null or omitted for none. */
  maxCredits?: number | null;
  taskCount: number;
}

export interface SetStatusOptions {
  /** Stored as `pausedReason` when `status` is `paused`; ignored otherwise. */
  reason?: string;
}

export interface RunListOptions {
  /** Most recent first; default 20. */
  limit?: number;
  /** Only runs of the pipeline with this name. */
  pipelineName?: string;
}

export interface RunsTable {
  /** Inserts a `queued` run. Throws HarvestError `RUN_EXISTS` when the id is taken. */
  create(input: RunInput): RunRow;
  get(id: string): RunRow | undefined;
  list(options?: RunListOptions): RunRow[];
  /** The most recently created run, if any. */
  latest(): RunRow | undefined;
  /**
   * Sets the status. `startedAt` is set the first time the run is `running`; `finishedAt` is
   * set on completed/failed/cancelled and cleared when a run is resumed. Returns false when no
   * such run exists.
   */
  setStatus(id: string, status: RunStatus, options?: SetStatusOptions): boolean;
  /**
   * Sets the number of tasks (for a run whose tasks were written after the run itself).
   * Returns false when no such run exists.
   */
  setTaskCount(id: string, taskCount: number): boolean;
  /**
   * When a queued or running run has no queued/running/retrying task left, marks it
   * `completed` (or `failed` when every task failed) and returns the new status; otherwise
   * returns null and changes nothing. Paused runs are left alone.
   */
  finishIfDone(id: string): RunStatus | null;
}

const SELECT = `
  SELECT r.id, r.pipeline_id AS pipelineId, p.name AS pipelineName, p.hash AS pipelineHash,
         r.status, r.paused_reason AS pausedReason, r.trigger, r.max_credits AS maxCredits,
         r.task_count AS taskCount, r.created_at AS createdAt, r.started_at AS startedAt,
         r.finished_at AS finishedAt
  FROM runs r JOIN pipelines p ON p.id = r.pipeline_id`;

export function createRunsTable(db: Database, now: Clock): RunsTable {
  const insert = db.prepare<[string, number, string, number | null, number, number]>(
    `INSERT INTO runs (id, pipeline_id, status, trigger, max_credits, task_count, created_at)
     VALUES (?, ?, 'queued', ?, ?, ?, ?)`,
  );
  const byId = db.prepare<[string], RunRow>(`${SELECT} WHERE r.id = ?`);
  const recent = db.prepare<[number], RunRow>(
    `${SELECT} ORDER BY r.created_at DESC, r.rowid DESC LIMIT ?`,
  );
  const recentOf = db.prepare<[string, number], RunRow>(
    `${SELECT} WHERE p.name = ? ORDER BY r.created_at DESC, r.rowid DESC LIMIT ?`,
  );
  const update = db.prepare<{ id: string; status: RunStatus; reason: string | null; at: number }>(
    `UPDATE runs SET
       status = @status,
       paused_reason = CASE WHEN @status = 'paused' THEN @reason ELSE NULL END,
       started_at = CASE WHEN @status = 'running' THEN COALESCE(started_at, @at) ELSE started_at END,
       finished_at = CASE
         WHEN @status IN ('completed', 'failed', 'cancelled') THEN @at
         WHEN @status IN ('queued', 'running') THEN NULL
         ELSE finished_at END
     WHERE id = @id`,
  );

  const updateTaskCount = db.prepare<[number, string]>(
    'UPDATE runs SET task_count = ? WHERE id = ?',
  );

  const finish = db.prepare<{ id: string; at: number }, { status: RunStatus }>(
    `UPDATE runs SET
       status = CASE
         WHEN EXISTS (SELECT 1 FROM tasks WHERE run_id = @id AND status = 'done')
           OR NOT EXISTS (SELECT 1 FROM tasks WHERE run_id = @id)
         THEN 'completed' ELSE 'failed' END,
       paused_reason = NULL,
       started_at = COALESCE(started_at, @at),
       finished_at = @at
     WHERE id = @id AND status IN ('queued', 'running') AND NOT EXISTS (
       SELECT 1 FROM tasks WHERE run_id = @id AND status IN ('queued', 'running', 'retrying'))
     RETURNING status`,
  );

  const table: RunsTable = {
    create(input) {
      try {
        insert.run(
          input.id,
          input.pipelineId,
          input.trigger,
          input.maxCredits ?? null,
          input.taskCount,
          now(),
        );
      } catch (error) {
        if (error instanceof Sqlite.SqliteError && error.code === 'SQLITE_CONSTRAINT_PRIMARYKEY') {
          throw new HarvestError('RUN_EXISTS', `run ${input.id} already exists`, { cause: error });
        }
        throw error;
      }
      const row = byId.get(input.id);
      if (!row) throw new Error(`run ${input.id} vanished after insert`);
      return row;
    },
    get: (id) => byId.get(id),
    list(options = {}) {
      const limit = options.limit ?? 20;
      return options.pipelineName === undefined
        ? recent.all(limit)
        : recentOf.all(options.pipelineName, limit);
    },
    latest: () => recent.get(1),
    setStatus(id, status, options = {}) {
      const info = update.run({ id, status, reason: options.reason ?? null, at: now() });
      return info.changes > 0;
    },
    setTaskCount: (id, taskCount) => updateTaskCount.run(taskCount, id).changes > 0,
    finishIfDone: (id) => finish.get({ id, at: now() })?.status ?? null,
  };
  return table;
}
