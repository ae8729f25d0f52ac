/**
 * `run_estimates`: the credit bounds of each run's plan (what `harvest plan` shows), recorded
 * when the run is planned, so a cost report can put the estimate beside the actual cost.
 */
import type { Database } from 'better-sqlite3';

export interface RunEstimate {
  /** Fewest credits the plan can cost. */
  minCredits: number;
  /** Most credits the plan can cost. */
  maxCredits: number;
  /** Tasks the estimate covers. */
  tasks: number;
}

export interface RunEstimatesTable {
  /** Records (or replaces) the estimate of a run's plan. */
  set(runId: string, estimate: RunEstimate): void;
  get(runId: string): RunEstimate | undefined;
}

export function createRunEstimatesTable(db: Database): RunEstimatesTable {
  const upsert = db.prepare<[string, number, number, number]>(
    `INSERT INTO run_estimates (run_id, min_credits, max_credits, tasks) VALUES (?, ?, ?, ?)
     ON CONFLICT (run_id) DO UPDATE SET min_credits = excluded.min_credits,
       max_credits = excluded.max_credits, tasks = excluded.tasks`,
  );
  const one = db.prepare<[string], RunEstimate>(
    `SELECT min_credits AS minCredits, max_credits AS maxCredits, tasks
     FROM run_estimates WHERE run_id = ?`,
  );
  return {
    set: (runId, e) => {
      upsert.run(runId, e.minCredits, e.maxCredits, e.tasks);
    },
    get: (runId) => one.get(runId),
  };
}
