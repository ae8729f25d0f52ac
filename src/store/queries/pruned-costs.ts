/**
 * The cost figures of calls and results that `harvest prune` removes, added to pruned_costs per
 * (run, side, UTC day, sources, formats, outcome): every key and figure of the cost report
 * (./cost-report.ts reads them back beside the live rows). Each statement covers the rows of a
 * range of one run's tasks; all calls of a task are in the same range, so retries (a task's
 * search calls beyond its first) are numbered as the report numbers them.
 */
import { KEYS } from './cost-report.ts';

const UPSERT_KEY = 'ON CONFLICT (run_id, side, day, sources, formats, outcome) DO UPDATE SET';

/** Adds the figures of the calls in `range` (SQL over `run_id` and `task_key`). */
export function moveCallCostsSql(range: string): string {
  return `WITH numbered AS (
      SELECT *, ROW_NUMBER() OVER (PARTITION BY task_key, purpose ORDER BY started_at, call_id)
        AS nth
      FROM calls WHERE ${range})
    INSERT INTO pruned_costs (run_id, side, day, sources, formats, outcome, first_at, calls,
      failed_calls, credits_used, unknown_cost_calls, lost_calls, retry_calls, retry_credits,
      retry_unknown_calls, reissue_calls, reissue_credits, reissue_unknown_calls, anomaly_calls,
      anomaly_credits)
    SELECT c.run_id, 'call', ${KEYS.day.call}, ${KEYS.source.call}, ${KEYS.format.call},
      c.outcome, MIN(c.started_at),
      COUNT(*),
      SUM(c.outcome <> 'ok'),
      COALESCE(SUM(c.credits_used), 0),
      SUM(c.credits_used IS NULL),
      SUM(c.outcome = 'LOST'),
      SUM(c.purpose = 'search' AND c.nth > 1),
      COALESCE(SUM(CASE WHEN c.purpose = 'search' AND c.nth > 1 THEN c.credits_used END), 0),
      SUM(c.purpose = 'search' AND c.nth > 1 AND c.credits_used IS NULL),
      SUM(c.purpose = 'media-reissue'),
      COALESCE(SUM(CASE WHEN c.purpose = 'media-reissue' THEN c.credits_used END), 0),
      SUM(c.purpose = 'media-reissue' AND c.credits_used IS NULL),
      COALESCE(SUM(c.credits_anomaly), 0),
      COALESCE(SUM(CASE WHEN c.credits_anomaly = 1 THEN c.credits_used END), 0)
    FROM numbered c LEFT JOIN tasks t ON t.run_id = c.run_id AND t.task_key = c.task_key
    WHERE true
    GROUP BY 1, 3, 4, 5, 6
    ${UPSERT_KEY}
      first_at = MIN(first_at, excluded.first_at),
      calls = calls + excluded.calls,
      failed_calls = failed_calls + excluded.failed_calls,
      credits_used = credits_used + excluded.credits_used,
      unknown_cost_calls = unknown_cost_calls + excluded.unknown_cost_calls,
      lost_calls = lost_calls + excluded.lost_calls,
      retry_calls = retry_calls + excluded.retry_calls,
      retry_credits = retry_credits + excluded.retry_credits,
      retry_unknown_calls = retry_unknown_calls + excluded.retry_unknown_calls,
      reissue_calls = reissue_calls + excluded.reissue_calls,
      reissue_credits = reissue_credits + excluded.reissue_credits,
      reissue_unknown_calls = reissue_unknown_calls + excluded.reissue_unknown_calls,
      anomaly_calls = anomaly_calls + excluded.anomaly_calls,
      anomaly_credits = anomaly_credits + excluded.anomaly_credits`;
}

/** Adds the result counts of the results in `range`, by the outcome of the call behind each. */
export function moveResultCostsSql(range: string): string {
  const scoped = range.replaceAll('run_id', 'r.run_id').replaceAll('task_key', 'r.task_key');
  return `INSERT INTO pruned_costs (run_id, side, day, sources, formats, outcome, first_at, results)
    SELECT r.run_id, 'result', ${KEYS.day.result}, ${KEYS.source.result}, ${KEYS.format.result},
      ${KEYS.outcome.result}, MIN(r.fetched_at), COUNT(*)
    FROM results r
      LEFT JOIN tasks t ON t.run_id = r.run_id AND t.task_key = r.task_key
      LEFT JOIN calls rc ON rc.call_id = r.call_id
    WHERE ${scoped}
    GROUP BY 1, 3, 4, 5, 6
    ${UPSERT_KEY}
      first_at = MIN(first_at, excluded.first_at),
      results = results + excluded.results`;
}
