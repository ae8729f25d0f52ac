/**
 * The figures of `harvest report costs`, summed from stored calls (what the service charged),
 * never from estimates. Grouped by one or two keys:
 *
 * | key        | a call's value                             | a result's value              |
 * |------------|--------------------------------------------|-------------------------------|
 * | `pipeline` | its run's pipeline                          | same                          |
 * | `run`      | its run                                     | same                          |
 * | `day`      | UTC day it started                          | UTC day it was fetched        |
 * | `source`   | sources its task asked for (`news+web`)     | same (one call pays for all)  |
 * | `format`   | scrape formats its task asked for, or none  | same                          |
 * | `outcome`  | `ok` or its error code                      | outcome of the call behind it |
 *
 * A call whose cost is unknown (`credits_used` null: a LOST call, an unreadable 200, no answer)
 * is counted apart and adds nothing to the credits. Retries are a task's search calls beyond its
 * first (by start time), whatever the outcome; re-issues are calls of purpose `media-reissue`.
 */
import type { Database } from 'better-sqlite3';

export const COST_GROUPS = ['pipeline', 'run', 'day', 'source', 'format', 'outcome'] as const;
export type CostGroup = (typeof COST_GROUPS)[number];

export interface CostQuery {
  /** One or two keys; rows come sorted by them. */
  by: readonly CostGroup[];
  runId?: string;
  /** Inclusive lower bound on calls' start and results' fetch time, ms since the epoch. */
  sinceMs?: number;
}

export interface CostFigures {
  calls: number;
  /** Calls whose outcome is not `ok`. */
  failedCalls: number;
  /** Sum of the known `creditsUsed`. */
  creditsUsed: number;
  /** Calls whose cost is unknown: counted, never guessed. */
  unknownCostCalls: number;
  /** Calls recorded as LOST (their worker died); their cost is unknown. */
  lostCalls: number;
  retryCalls: number;
  /** Known credits of the retries. */
  retryCredits: number;
  /** Retries whose cost is unknown. */
  retryUnknownCalls: number;
  reissueCalls: number;
  /** Known credits of the re-issues. */
  reissueCredits: number;
  /** Re-issues whose cost is unknown. */
  reissueUnknownCalls: number;
  /**
   * Calls billed implausible credits: `creditsUsed` above their request's most possible cost
   * times HARVEST_CREDITS_ANOMALY_FACTOR (src/events/call.ts). Kept as billed in `creditsUsed`.
   */
  anomalyCalls: number;
  /** The `creditsUsed` of those calls (part of `creditsUsed`). */
  anomalyCredits: number;
  /** Result rows stored. */
  results: number;
  /** Distinct runs with calls in the group (with results, for a group that has no calls). */
  runs: number;
}

export interface CostGroupRow extends CostFigures {
  /** The group's key values, in the order of `by`. */
  keys: string[];
}

export interface RunCostInfo {
  runId: string;
  pipelineName: string;
  status: string;
  createdAt: number;
  maxCredits: number | null;
  /** The plan's bounds, when the run recorded them. */
  estimateMinCredits: number | null;
  estimateMaxCredits: number | null;
}

export interface CostReports {
  /** Figures per group (an empty `by` gives one row: the totals). */
  costs(query: CostQuery): CostGroupRow[];
  /** Runs with their budget and plan estimate (all runs, or the one asked for). */
  runInfo(runId?: string): RunCostInfo[];
}

const UNKNOWN = "'(unknown)'";

function listKey(doc: string, path: string, empty: string): string {
  return `CASE WHEN ${doc} IS NULL THEN ${UNKNOWN} ELSE COALESCE((SELECT group_concat(v, '+' ORDER BY v)
    FROM (SELECT DISTINCT CASE WHEN j.type = 'object' THEN json_extract(j.value, '$.type')
      ELSE j.value END AS v FROM json_each(${doc}, '${path}') j)), '${empty}') END`;
}

/** SQL of each key for calls (`c`) and results (`r`); `p` and `t` are joined as needed. */
export const KEYS: Record<CostGroup, { call: string; result: string }> = {
  pipeline: { call: `COALESCE(p.name, ${UNKNOWN})`, result: `COALESCE(p.name, ${UNKNOWN})` },
  run: { call: 'c.run_id', result: 'r.run_id' },
  day: {
    call: "strftime('%Y-%m-%d', c.started_at / 1000, 'unixepoch')",
    result: "strftime('%Y-%m-%d', r.fetched_at / 1000, 'unixepoch')",
  },
  source: {
    call: listKey('t.request_json', '$.sources', 'web'),
    result: listKey('t.request_json', '$.sources', 'web'),
  },
  format: {
    call: listKey('t.request_json', '$.scrapeOptions.formats', 'none'),
    result: listKey('t.request_json', '$.scrapeOptions.formats', 'none'),
  },
  outcome: { call: 'c.outcome', result: `COALESCE(rc.outcome, ${UNKNOWN})` },
};

/** SQL of each key for the summed rows of pruned runs (`s`, pruned_costs). */
const PRUNED_KEYS: Record<CostGroup, string> = {
  pipeline: `COALESCE(p.name, ${UNKNOWN})`,
  run: 's.run_id',
  day: 's.day',
  source: 's.sources',
  format: 's.formats',
  outcome: 's.outcome',
};

function keyList(by: readonly CostGroup[], side: 'call' | 'result' | 'pruned'): string {
  if (by.length === 0) return "'all' AS k0";
  return by
    .map((g, i) => `${side === 'pruned' ? PRUNED_KEYS[g] : KEYS[g][side]} AS k${i}`)
    .join(', ');
}

function groupBy(by: readonly CostGroup[]): string {
  const keys = by.length === 0 ? ['k0'] : by.map((_, i) => `k${i}`);
  return `GROUP BY ${keys.join(', ')}`;
}

function callsSql(q: CostQuery): string {
  const scope = q.runId === undefined ? '' : 'WHERE run_id = @runId';
  const since = q.sinceMs === undefined ? '' : 'WHERE c.started_at >= @sinceMs';
  return `WITH numbered AS (
      SELECT *, ROW_NUMBER() OVER (PARTITION BY run_id, task_key, purpose
        ORDER BY started_at, call_id) AS nth
      FROM calls ${scope})
    SELECT ${keyList(q.by, 'call')},
      COUNT(*) AS calls,
      SUM(c.outcome <> 'ok') AS failedCalls,
      COALESCE(SUM(c.credits_used), 0) AS creditsUsed,
      SUM(c.credits_used IS NULL) AS unknownCostCalls,
      SUM(c.outcome = 'LOST') AS lostCalls,
      SUM(c.purpose = 'search' AND c.nth > 1) AS retryCalls,
      COALESCE(SUM(CASE WHEN c.purpose = 'search' AND c.nth > 1 THEN c.credits_used END), 0)
        AS retryCredits,
      SUM(c.purpose = 'search' AND c.nth > 1 AND c.credits_used IS NULL) AS retryUnknownCalls,
      SUM(c.purpose = 'media-reissue') AS reissueCalls,
      COALESCE(SUM(CASE WHEN c.purpose = 'media-reissue' THEN c.credits_used END), 0)
        AS reissueCredits,
      SUM(c.purpose = 'media-reissue' AND c.credits_used IS NULL) AS reissueUnknownCalls,
      SUM(c.credits_anomaly) AS anomalyCalls,
      COALESCE(SUM(CASE WHEN c.credits_anomaly = 1 THEN c.credits_used END), 0) AS anomalyCredits,
      COUNT(DISTINCT c.run_id) AS runs
    FROM numbered c
      LEFT JOIN runs ru ON ru.id = c.run_id
      LEFT JOIN pipelines p ON p.id = ru.pipeline_id
      LEFT JOIN tasks t ON t.run_id = c.run_id AND t.task_key = c.task_key
    ${since}
    ${groupBy(q.by)}`;
}

function resultsSql(q: CostQuery): string {
  const where = [
    q.runId === undefined ? '' : 'r.run_id = @runId',
    q.sinceMs === undefined ? '' : 'r.fetched_at >= @sinceMs',
  ].filter(Boolean);
  const outcome = q.by.includes('outcome') ? 'LEFT JOIN calls rc ON rc.call_id = r.call_id' : '';
  return `SELECT ${keyList(q.by, 'result')}, COUNT(*) AS results, COUNT(DISTINCT r.run_id) AS runs
    FROM results r
      LEFT JOIN runs ru ON ru.id = r.run_id
      LEFT JOIN pipelines p ON p.id = ru.pipeline_id
      LEFT JOIN tasks t ON t.run_id = r.run_id AND t.task_key = r.task_key
      ${outcome}
    ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''}
    ${groupBy(q.by)}`;
}

/**
 * The figures of pruned runs (`harvest prune`), summed from pruned_costs. A pruned row counts
 * under `--since` when its first call (or result) of the day is not earlier. A run counts once
 * its live rows are gone: a run being pruned is counted by its live rows meanwhile.
 */
function prunedSql(q: CostQuery, side: 'call' | 'result'): string {
  const where = [
    `s.side = '${side}'`,
    q.runId === undefined ? '' : 's.run_id = @runId',
    q.sinceMs === undefined ? '' : 's.first_at >= @sinceMs',
  ].filter(Boolean);
  const live = side === 'call' ? 'calls' : 'results';
  const figures =
    side === 'call'
      ? `SUM(s.calls) AS calls, SUM(s.failed_calls) AS failedCalls,
      SUM(s.credits_used) AS creditsUsed, SUM(s.unknown_cost_calls) AS unknownCostCalls,
      SUM(s.lost_calls) AS lostCalls, SUM(s.retry_calls) AS retryCalls,
      SUM(s.retry_credits) AS retryCredits, SUM(s.retry_unknown_calls) AS retryUnknownCalls,
      SUM(s.reissue_calls) AS reissueCalls, SUM(s.reissue_credits) AS reissueCredits,
      SUM(s.reissue_unknown_calls) AS reissueUnknownCalls,
      SUM(s.anomaly_calls) AS anomalyCalls, SUM(s.anomaly_credits) AS anomalyCredits`
      : 'SUM(s.results) AS results';
  return `SELECT ${keyList(q.by, 'pruned')}, ${figures},
      COUNT(DISTINCT CASE WHEN NOT EXISTS (SELECT 1 FROM ${live} x WHERE x.run_id = s.run_id)
        THEN s.run_id END) AS runs
    FROM pruned_costs s
      LEFT JOIN runs ru ON ru.id = s.run_id
      LEFT JOIN pipelines p ON p.id = ru.pipeline_id
    WHERE ${where.join(' AND ')}
    ${groupBy(q.by)}`;
}

/** The figures of a group with no call and no result. */
export const NO_COSTS: Readonly<CostFigures> = Object.freeze({
  calls: 0,
  failedCalls: 0,
  creditsUsed: 0,
  unknownCostCalls: 0,
  lostCalls: 0,
  retryCalls: 0,
  retryCredits: 0,
  retryUnknownCalls: 0,
  reissueCalls: 0,
  reissueCredits: 0,
  reissueUnknownCalls: 0,
  anomalyCalls: 0,
  anomalyCredits: 0,
  results: 0,
  runs: 0,
});

/** The figures summed from calls (results and runs come from both sides). */
const CALL_FIGURES = [
  'calls',
  'failedCalls',
  'creditsUsed',
  'unknownCostCalls',
  'lostCalls',
  'retryCalls',
  'retryCredits',
  'retryUnknownCalls',
  'reissueCalls',
  'reissueCredits',
  'reissueUnknownCalls',
  'anomalyCalls',
  'anomalyCredits',
] as const;

type Raw = Record<string, string | number>;

export function createCostReports(db: Database): CostReports {
  const runInfoSql = `SELECT ru.id AS runId, p.name AS pipelineName, ru.status, ru.created_at AS createdAt,
      ru.max_credits AS maxCredits, e.min_credits AS estimateMinCredits,
      e.max_credits AS estimateMaxCredits
    FROM runs ru JOIN pipelines p ON p.id = ru.pipeline_id
      LEFT JOIN run_estimates e ON e.run_id = ru.id`;
  const allRuns = db.prepare<[], RunCostInfo>(`${runInfoSql} ORDER BY ru.created_at, ru.id`);
  const oneRun = db.prepare<[string], RunCostInfo>(`${runInfoSql} WHERE ru.id = ?`);

  return {
    costs(q) {
      if (q.by.length > 2) throw new Error('a cost report groups by at most two keys');
      const params: Record<string, string | number> = {};
      if (q.runId !== undefined) params.runId = q.runId;
      if (q.sinceMs !== undefined) params.sinceMs = q.sinceMs;
      const width = Math.max(1, q.by.length);
      const keysOf = (row: Raw) => Array.from({ length: width }, (_, i) => String(row[`k${i}`]));
      const groups = new Map<string, CostGroupRow>();
      const groupOf = (row: Raw) => {
        const keys = keysOf(row);
        const id = JSON.stringify(keys);
        let g = groups.get(id);
        if (!g) {
          g = { keys, ...NO_COSTS };
          groups.set(id, g);
        }
        return g;
      };
      const all = (sql: string) =>
        db.prepare<Record<string, string | number>, Raw>(sql).all(params);
      // Live rows and the sums of pruned runs add up: no run has both once it is pruned.
      const resultRuns = new Map<CostGroupRow, number>();
      db.transaction(() => {
        for (const row of [...all(callsSql(q)), ...all(prunedSql(q, 'call'))]) {
          const g = groupOf(row);
          for (const k of CALL_FIGURES) g[k] += Number(row[k] ?? 0);
          g.runs += Number(row.runs);
        }
        for (const row of [...all(resultsSql(q)), ...all(prunedSql(q, 'result'))]) {
          const g = groupOf(row);
          g.results += Number(row.results);
          resultRuns.set(g, (resultRuns.get(g) ?? 0) + Number(row.runs));
        }
      })();
      // Runs with results but no call in the window still count as runs of the group.
      for (const [g, runs] of resultRuns) g.runs = Math.max(g.runs, runs);
      const rows = [...groups.values()];
      return rows.sort((a, b) => compareKeys(a.keys, b.keys));
    },
    runInfo: (runId) => (runId === undefined ? allRuns.all() : oneRun.all(runId)),
  };
}

function compareKeys(a: string[], b: string[]): number {
  for (let i = 0; i < a.length; i++) {
    const x = a[i] ?? '';
    const y = b[i] ?? '';
    if (x !== y) return x < y ? -1 : 1;
  }
  return 0;
}
