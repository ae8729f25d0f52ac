/**
 * `calls`: every HTTP call to the API, successful or not, once per `callId`. Cost reports sum
 * these, not results: a failed call can cost credits too.
 */
import type { Database } from 'better-sqlite3';
import type { CallEvent } from '../events/store.ts';

/** Longest error message or warning kept, in characters. */
export const MAX_MESSAGE_CHARS = 4000;

export interface CallSummary {
  calls: number;
  /** Sum of the known `creditsUsed`. */
  creditsUsed: number;
  /** Calls per outcome (`ok` or an error code). */
  byOutcome: Record<string, number>;
  /** Calls whose cost is unknown (no `creditsUsed` in the answer). */
  unknownCostCalls: number;
}

/** A run's call figures without the per-outcome split: one row read, whatever the run's size. */
export type CallTotals = Omit<CallSummary, 'byOutcome'>;

export interface CallError {
  taskKey: string;
  attempt: number;
  outcome: string;
  status: number | null;
  errorMessage: string | null;
  /** ms since the epoch. */
  startedAt: number;
}

export interface CallsTable {
  /**
   * Records a call; returns false when this `callId` was recorded already. A `LOST` record
   * (written when its worker fell silent) gives way to the call's real record: the worker may
   * have been slow rather than dead, and the real record knows what the call cost.
   */
  insert(event: CallEvent): boolean;
  summary(runId: string): CallSummary;
  /** `summary` without the per-outcome split, read from counters: cheap enough to poll. */
  totals(runId: string): CallTotals;
  /** Calls of the run of unknown cost (no answer read, lost with a worker), by task key. */
  unknownCostByTask(runId: string): { taskKey: string; calls: number }[];
  /** The run's most recent failed calls, newest first; default limit 5. */
  recentErrors(runId: string, limit?: number): CallError[];
  /** The run's calls of implausible credits (`creditsAnomaly`). */
  anomalies(runId: string): CreditAnomalies;
}

/** Calls whose `creditsUsed` was implausible (src/events/call.ts `okCallEvent`). */
export interface CreditAnomalies {
  calls: number;
  /** Their `creditsUsed`, as billed. */
  creditsUsed: number;
  /** What they count against the budget: the most their requests could cost. */
  creditsCounted: number;
}

export function clip(text: string | null | undefined): string | null {
  if (text == null) return null;
  return text.length > MAX_MESSAGE_CHARS ? `${text.slice(0, MAX_MESSAGE_CHARS - 1)}…` : text;
}

/** What a call's record says of its outcome, in the order of the `calls` columns. */
type OutcomeColumns = [
  durationMs: number,
  status: number | null,
  outcome: string,
  errorMessage: string | null,
  searchId: string | null,
  warning: string | null,
  creditsUsed: number | null,
  retryAfterMs: number | null,
  creditsMax: number | null,
  creditsAnomaly: 0 | 1,
];

function outcomeColumns(e: CallEvent): OutcomeColumns {
  return [
    Math.round(e.durationMs),
    e.status,
    e.outcome,
    clip(e.errorMessage),
    e.searchId ?? null,
    clip(e.warning),
    e.creditsUsed,
    e.retryAfterMs ?? null,
    e.creditsMax ?? null,
    e.creditsAnomaly === true ? 1 : 0,
  ];
}

export function createCallsTable(db: Database): CallsTable {
  const insert = db.prepare<
    [
      callId: string,
      runId: string,
      taskKey: string,
      attempt: number,
      startedAt: number,
      purpose: string,
      ...OutcomeColumns,
    ]
  >(
    `INSERT OR IGNORE INTO calls (call_id, run_id, task_key, attempt, started_at, purpose,
       duration_ms, status, outcome, error_message, search_id, warning, credits_used,
       retry_after_ms, credits_max, credits_anomaly)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const replaceLost = db.prepare<[...OutcomeColumns, callId: string]>(
    `UPDATE calls SET duration_ms = ?, status = ?, outcome = ?, error_message = ?, search_id = ?,
       warning = ?, credits_used = ?, retry_after_ms = ?, credits_max = ?, credits_anomaly = ?
     WHERE call_id = ? AND outcome = 'LOST'`,
  );
  const byOutcome = db.prepare<
    [string],
    { outcome: string; calls: number; credits: number | null; unknown: number }
  >(
    `SELECT outcome, COUNT(*) AS calls, SUM(credits_used) AS credits,
            SUM(credits_used IS NULL) AS unknown
     FROM calls WHERE run_id = ? GROUP BY outcome`,
  );
  const totals = db.prepare<[string], CallTotals>(
    `SELECT calls, credits_used AS creditsUsed, unknown_cost_calls AS unknownCostCalls
     FROM run_counts WHERE run_id = ?`,
  );
  const unknownByTask = db.prepare<[string], { taskKey: string; calls: number }>(
    `SELECT task_key AS taskKey, COUNT(*) AS calls FROM calls
     WHERE run_id = ? AND credits_used IS NULL GROUP BY task_key`,
  );
  const errors = db.prepare<[string, number], CallError>(
    `SELECT task_key AS taskKey, attempt, outcome, status, error_message AS errorMessage,
            started_at AS startedAt
     FROM calls WHERE run_id = ? AND outcome <> 'ok'
     ORDER BY started_at DESC, rowid DESC LIMIT ?`,
  );
  const anomalies = db.prepare<[string], CreditAnomalies>(
    `SELECT COUNT(*) AS calls, COALESCE(SUM(credits_used), 0) AS creditsUsed,
            COALESCE(SUM(credits_max), 0) AS creditsCounted
     FROM calls WHERE run_id = ? AND credits_anomaly = 1`,
  );

  return {
    insert(e) {
      const outcome = outcomeColumns(e);
      const purpose = e.purpose ?? 'search';
      const info = insert.run(
        e.callId,
        e.runId,
        e.taskKey,
        e.attempt,
        e.startedAt,
        purpose,
        ...outcome,
      );
      if (info.changes > 0) return true;
      return e.outcome !== 'LOST' && replaceLost.run(...outcome, e.callId).changes > 0;
    },
    summary(runId) {
      const s: CallSummary = { calls: 0, creditsUsed: 0, byOutcome: {}, unknownCostCalls: 0 };
      for (const row of byOutcome.all(runId)) {
        s.calls += row.calls;
        s.creditsUsed += row.credits ?? 0;
        s.unknownCostCalls += row.unknown;
        s.byOutcome[row.outcome] = row.calls;
      }
      return s;
    },
    totals: (runId) => totals.get(runId) ?? { calls: 0, creditsUsed: 0, unknownCostCalls: 0 },
    unknownCostByTask: (runId) => unknownByTask.all(runId),
    recentErrors: (runId, limit = 5) => errors.all(runId, limit),
    anomalies: (runId) => anomalies.get(runId) ?? { calls: 0, creditsUsed: 0, creditsCounted: 0 },
  };
}
