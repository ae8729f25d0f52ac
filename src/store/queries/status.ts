/** `runStatus`: everything `harvest status` shows about one run, from one read transaction. */
import type { Database } from 'better-sqlite3';
import type { Tables } from '../apply-events.ts';
import type { CallError, CallSummary, CreditAnomalies } from '../calls.ts';
import type { NotificationRow, NotificationsTable } from '../notifications.ts';
import type { RunRow } from '../runs.ts';
import type { TaskCounts, TasksTable } from '../tasks.ts';
import type { MediaReports, MediaSummary } from './media-report.ts';

export interface RunStatusReport {
  run: RunRow;
  tasks: TaskCounts;
  calls: CallSummary;
  /** Result rows stored for the run. */
  results: number;
  /** Results new to the pipeline: URLs it saw for the first time in this run. */
  newUrls: number;
  /**
   * Credits left under `maxCredits` (never below 0), implausible bills counted as the budget
   * counts them (`creditAnomalies`); null when the run has no budget.
   */
  creditsRemaining: number | null;
  /** Calls answered with an implausible `creditsUsed` (src/events/call.ts `okCallEvent`). */
  creditAnomalies: CreditAnomalies;
  /** The webhook of a scheduled run (`schedule.notify`) and how its delivery went; else null. */
  notification: NotificationRow | null;
  /** The run's media: saved of requested, pending, and the deadline due first; null when it saves none. */
  media: MediaSummary | null;
  /**
   * What `harvest prune` removed of the run (its figures kept in pruned_costs, so cost reports
   * still count them); null when nothing was. `calls` and `results` count live rows only.
   */
  pruned: PrunedFigures | null;
  errors: {
    /** Failed calls per error code. */
    callsByCode: Record<string, number>;
    /** Failed tasks per last error code. */
    failedTasksByCode: Record<string, number>;
    /** Most recent failed calls, newest first. */
    recent: CallError[];
  };
}

export interface PrunedFigures {
  calls: number;
  creditsUsed: number;
  /** Calls of unknown cost among them. */
  unknownCostCalls: number;
  results: number;
}

export interface RunStatusOptions {
  /** How many recent failed calls to include; default 5. */
  recentErrors?: number;
  /**
   * Keys of the run's tasks whose call is in flight (from the in-flight journal in Redis):
   * counted as `running`. SQLite keeps a task `queued` or `retrying` until its call's record
   * arrives, so without them no task ever reads as running.
   */
  inFlightTaskKeys?: readonly string[];
}

/** The tables a run's status reads, and its media summary. */
type StatusTables = Pick<Tables, 'runs' | 'tasks' | 'calls' | 'results' | 'seenUrls'> & {
  notifications: NotificationsTable;
  mediaSummary: MediaReports['mediaSummary'];
};

export type RunStatusFn = (
  runId: string,
  options?: RunStatusOptions,
) => RunStatusReport | undefined;

export function createRunStatus(db: Database, t: StatusTables): RunStatusFn {
  const pruned = db.prepare<[string], PrunedFigures & { rows: number }>(
    `SELECT COUNT(*) AS rows, COALESCE(SUM(calls), 0) AS calls,
       COALESCE(SUM(credits_used), 0) AS creditsUsed,
       COALESCE(SUM(unknown_cost_calls), 0) AS unknownCostCalls,
       COALESCE(SUM(results), 0) AS results
     FROM pruned_costs WHERE run_id = ?`,
  );
  const prunedOf = (runId: string): PrunedFigures | null => {
    const { rows, ...figures } = pruned.get(runId) ?? { rows: 0 };
    return rows === 0 ? null : (figures as PrunedFigures);
  };
  // One deferred transaction, so all figures come from the same snapshot.
  return db.transaction((runId: string, options: RunStatusOptions = {}) => {
    const run = t.runs.get(runId);
    if (!run) return undefined;
    const calls = t.calls.summary(runId);
    const anomalies = t.calls.anomalies(runId);
    const counted = calls.creditsUsed - anomalies.creditsUsed + anomalies.creditsCounted;
    const callsByCode = Object.fromEntries(
      Object.entries(calls.byOutcome).filter(([outcome]) => outcome !== 'ok'),
    );
    return {
      run,
      tasks: withCallsInFlight(t.tasks, runId, options.inFlightTaskKeys ?? []),
      calls,
      results: t.results.count(runId),
      newUrls: t.seenUrls.countFirstSeenIn(runId),
      creditsRemaining: run.maxCredits === null ? null : Math.max(0, run.maxCredits - counted),
      creditAnomalies: anomalies,
      notification: t.notifications.get(runId) ?? null,
      media: t.mediaSummary(runId) ?? null,
      pruned: prunedOf(runId),
      errors: {
        callsByCode,
        failedTasksByCode: t.tasks.failedByCode(runId),
        recent: t.calls.recentErrors(runId, options.recentErrors ?? 5),
      },
    };
  });
}

/** The run's task counts, its queued or retrying tasks with a call in flight moved to running. */
function withCallsInFlight(
  tasks: TasksTable,
  runId: string,
  inFlight: readonly string[],
): TaskCounts {
  const counts = tasks.counts(runId);
  for (const key of new Set(inFlight)) {
    const status = tasks.get(runId, key)?.status;
    if (status === 'queued' || status === 'retrying') {
      counts[status] -= 1;
      counts.running += 1;
    }
  }
  return counts;
}
