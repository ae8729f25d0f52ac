/**
 * Recording what changed in a run: once a run has finished, its results are classified against
 * the pipeline's previous completed run (./classify.ts) and kept in result_changes,
 * dropped_results and change_runs, so reading a run's changes is a read of those rows. A run
 * is recorded again when it finished again since (resumed). The baseline's side comes from its
 * own recorded rows; a baseline not recorded (a run from before this schema) is read from its
 * result rows' content hashes instead, so recording one run never walks a pipeline's whole
 * history.
 */
import type { Database } from 'better-sqlite3';
import type { Clock } from '../clock.ts';
import type { ResultsTable } from '../results.ts';
import type { RunRow, RunsTable } from '../runs.ts';
import {
  type BaselineObservation,
  type ChangeCounts,
  type Classification,
  classify,
} from './classify.ts';
import { observeRun } from './observe.ts';
import { searchKey } from './search-key.ts';

/** What change_runs says of a recorded run. */
export interface RunChanges extends ChangeCounts {
  runId: string;
  /** The run it was compared with; null when the pipeline had no completed run before. */
  baselineRunId: string | null;
  recordedAt: number;
}

export interface ChangeRecorder {
  /** The pipeline's completed run created last before `runId`; undefined when none. */
  baselineOf(runId: string): string | undefined;
  /** The recorded changes of `runId`, undefined when not recorded. */
  recorded(runId: string): RunChanges | undefined;
  /**
   * The changes of a finished run, recorded now when they are not (or the run finished again
   * since); undefined for an unknown or unfinished run. Writes: needs a writable store.
   */
  ensure(runId: string): RunChanges | undefined;
  /** The search key of each task of a run, and the keys of the searches it answered. */
  searchesOf(runId: string): { keyOf: Map<string, string>; answered: Set<string> };
  /** The stored observations of a recorded run (URL from its result rows). */
  observations(runId: string): BaselineObservation[];
}

const FINISHED = new Set(['completed', 'failed', 'cancelled']);
/** Search keys remembered at most (of the requests of recent runs). */
const MAX_CACHED_KEYS = 100_000;

function prepare(db: Database) {
  return {
    baseline: db
      .prepare<{ runId: string }, string>(
        `SELECT r.id FROM runs me
           JOIN pipelines mp ON mp.id = me.pipeline_id
           JOIN pipelines p ON p.name = mp.name
           JOIN runs r ON r.pipeline_id = p.id
         WHERE me.id = @runId AND r.status = 'completed' AND r.id <> me.id
           AND (r.created_at < me.created_at OR (r.created_at = me.created_at AND r.rowid < me.rowid))
         ORDER BY r.created_at DESC, r.rowid DESC LIMIT 1`,
      )
      .pluck(),
    recorded: db.prepare<[string], RunChanges & { finishedAt: number | null }>(
      `SELECT run_id AS runId, baseline_run_id AS baselineRunId, finished_at AS finishedAt,
         recorded_at AS recordedAt, results, new, same, changed, dropped, moved_up AS movedUp,
         moved_down AS movedDown
       FROM change_runs WHERE run_id = ?`,
    ),
    tasks: db.prepare<
      [string],
      { taskKey: string; requestJson: string; entry: string | null; status: string }
    >(
      `SELECT task_key AS taskKey, request_json AS requestJson, search_id AS entry, status
       FROM tasks WHERE run_id = ?`,
    ),
    observations: db.prepare<[string], BaselineObservation>(
      `SELECT c.task_key AS taskKey, c.source, c.position, r.url, c.search_key AS searchKey,
         c.content_hash AS contentHash, c.last_changed_run AS lastChangedRun
       FROM result_changes c
         JOIN results r ON r.run_id = c.run_id AND r.task_key = c.task_key
           AND r.source = c.source AND r.position = c.position
       WHERE c.run_id = ? AND r.url IS NOT NULL`,
    ),
    clearRun: db.prepare<[string]>('DELETE FROM change_runs WHERE run_id = ?'),
    clearResults: db.prepare<[string]>('DELETE FROM result_changes WHERE run_id = ?'),
    clearDropped: db.prepare<[string]>('DELETE FROM dropped_results WHERE run_id = ?'),
    insertRun: db.prepare(
      `INSERT INTO change_runs (run_id, baseline_run_id, finished_at, recorded_at, results, new,
         same, changed, dropped, moved_up, moved_down)
       VALUES (@runId, @baselineRunId, @finishedAt, @recordedAt, @results, @new, @same,
         @changed, @dropped, @movedUp, @movedDown)`,
    ),
    // Bound by position: a run's recording inserts a row per result, and named parameters
    // cost a lookup each.
    insertResult: db.prepare<
      [string, string, string, number, string, string, string, number | null, string | null, string]
    >(
      `INSERT INTO result_changes (run_id, task_key, source, position, search_key, status,
         content_hash, previous_position, previous_hash, last_changed_run)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    insertDropped: db.prepare(
      `INSERT INTO dropped_results (run_id, search_key, source, url, previous_task_key,
         previous_position, previous_hash)
       VALUES (@runId, @searchKey, @source, @url, @previousTaskKey, @previousPosition,
         @previousHash)`,
    ),
  };
}

export function createChangeRecorder(
  db: Database,
  t: { runs: Pick<RunsTable, 'get'>; results: Pick<ResultsTable, 'changeRows' | 'count'> },
  now: Clock,
): ChangeRecorder {
  const s = prepare(db);
  const recorded = (runId: string) => {
    const row = s.recorded.get(runId);
    if (row === undefined) return undefined;
    const { finishedAt: _finishedAt, ...changes } = row;
    return changes;
  };
  const upToDate = (run: RunRow) => s.recorded.get(run.id)?.finishedAt === run.finishedAt;

  // A scheduled pipeline asks the same searches at every run: their keys are computed once.
  const keys = new Map<string, string>();
  const keyOfTask = (requestJson: string, entry: string | null) => {
    const id = `${entry ?? ''}\u0000${requestJson}`;
    let key = keys.get(id);
    if (key === undefined) {
      if (keys.size >= MAX_CACHED_KEYS) keys.clear();
      key = searchKey(requestJson, entry);
      keys.set(id, key);
    }
    return key;
  };

  const searchesOf = (runId: string) => {
    const keyOf = new Map<string, string>();
    const answered = new Set<string>();
    for (const task of s.tasks.iterate(runId)) {
      const key = keyOfTask(task.requestJson, task.entry);
      keyOf.set(task.taskKey, key);
      if (task.status === 'done') answered.add(key);
    }
    return { keyOf, answered };
  };

  const write = db.transaction(
    (run: RunRow, baselineRunId: string | null, c: Classification, recordedAt: number) => {
      for (const clear of [s.clearRun, s.clearResults, s.clearDropped]) clear.run(run.id);
      for (const r of c.results) {
        s.insertResult.run(
          run.id,
          r.taskKey,
          r.source,
          r.position,
          r.searchKey,
          r.status,
          r.contentHash,
          r.previousPosition,
          r.previousHash,
          r.lastChangedRun,
        );
      }
      for (const row of c.dropped) s.insertDropped.run({ runId: run.id, ...row });
      s.insertRun.run({
        runId: run.id,
        baselineRunId,
        finishedAt: run.finishedAt,
        recordedAt,
        ...c.counts,
      });
    },
  );

  // The run recorded last, as the next run's baseline reads it (usually the very next run of
  // its pipeline), so that run's rows are not read back. Used only while change_runs still has
  // the same recording and the run the same number of results (not pruned since).
  let last:
    | { runId: string; recordedAt: number; results: number; rows: BaselineObservation[] }
    | undefined;
  const lastRecorded = (runId: string, recordedAt: number) =>
    last?.runId === runId &&
    last.recordedAt === recordedAt &&
    t.results.count(runId) === last.results
      ? last.rows
      : undefined;

  /** The baseline's results: its recorded rows, or, when it is not recorded, its result rows. */
  const baselineRows = (baselineRunId: string): BaselineObservation[] => {
    const baseline = t.runs.get(baselineRunId);
    const recording = s.recorded.get(baselineRunId);
    if (baseline !== undefined && recording?.finishedAt === baseline.finishedAt) {
      return lastRecorded(baselineRunId, recording.recordedAt) ?? s.observations.all(baselineRunId);
    }
    // Its history unknown: what it has was there by the baseline at the latest.
    return observeRun(t.results, baselineRunId, searchesOf(baselineRunId).keyOf).map((o) => ({
      ...o,
      lastChangedRun: baselineRunId,
    }));
  };

  const recordOne = (run: RunRow) => {
    const baselineRunId = s.baseline.get({ runId: run.id }) ?? null;
    const { keyOf, answered } = searchesOf(run.id);
    const current = observeRun(t.results, run.id, keyOf);
    const before = baselineRunId === null ? [] : baselineRows(baselineRunId);
    const c = classify(run.id, current, before, answered);
    const recordedAt = now();
    write.immediate(run, baselineRunId, c, recordedAt);
    // A classified result is the observation the next run compares with (what it recorded).
    last = { runId: run.id, recordedAt, results: t.results.count(run.id), rows: c.results };
  };

  return {
    baselineOf: (runId) => s.baseline.get({ runId }),
    recorded,
    searchesOf,
    observations: (runId) => s.observations.all(runId),
    ensure(runId) {
      const run = t.runs.get(runId);
      if (run === undefined || !FINISHED.has(run.status)) return undefined;
      if (!upToDate(run)) recordOne(run);
      return recorded(runId);
    },
  };
}
