/**
 * Small cost queries over `calls` (credits are summed from calls, not results: a failed call
 * can cost credits too). Days are UTC calendar days.
 */
import type { Database } from 'better-sqlite3';
import { type CostReports, createCostReports } from './cost-report.ts';

export interface CreditTotals {
  calls: number;
  /** Sum of the known `creditsUsed`. */
  creditsUsed: number;
  /** Calls whose cost is unknown. */
  unknownCostCalls: number;
}

export interface RunCredits extends CreditTotals {
  runId: string;
  pipelineName: string;
  status: string;
  /** ms since the epoch. */
  createdAt: number;
}

export interface DayCredits extends CreditTotals {
  /** UTC day, `YYYY-MM-DD`. */
  day: string;
}

export interface PipelineCredits extends CreditTotals {
  pipelineName: string;
  runs: number;
}

export interface CreditsByRunOptions {
  /** Most recent runs first; default 50. */
  limit?: number;
  pipelineName?: string;
}

export interface TimeRange {
  /** Inclusive lower bound on the call's `startedAt`, ms since the epoch; default 0. */
  sinceMs?: number;
  /** Exclusive upper bound, ms since the epoch; default no bound. */
  untilMs?: number;
}

/** Credit figures by run, day and pipeline, and the grouped figures of `harvest report costs`. */
export interface Reports extends CostReports {
  creditsByRun(options?: CreditsByRunOptions): RunCredits[];
  creditsByDay(range?: TimeRange): DayCredits[];
  creditsByPipeline(range?: TimeRange): PipelineCredits[];
}

const TOTALS = `COUNT(c.call_id) AS calls, COALESCE(SUM(c.credits_used), 0) AS creditsUsed,
  COALESCE(SUM(c.call_id IS NOT NULL AND c.credits_used IS NULL), 0) AS unknownCostCalls`;
const RUN_COLUMNS = `ru.id AS runId, p.name AS pipelineName, ru.status, ru.created_at AS createdAt`;
const FOREVER = Number.MAX_SAFE_INTEGER;

export function createReports(db: Database): Reports {
  const byRun = db.prepare<[number], RunCredits>(
    `SELECT ${RUN_COLUMNS}, ${TOTALS}
     FROM runs ru JOIN pipelines p ON p.id = ru.pipeline_id LEFT JOIN calls c ON c.run_id = ru.id
     GROUP BY ru.id ORDER BY ru.created_at DESC, ru.id DESC LIMIT ?`,
  );
  const byRunOf = db.prepare<[string, number], RunCredits>(
    `SELECT ${RUN_COLUMNS}, ${TOTALS}
     FROM runs ru JOIN pipelines p ON p.id = ru.pipeline_id LEFT JOIN calls c ON c.run_id = ru.id
     WHERE p.name = ?
     GROUP BY ru.id ORDER BY ru.created_at DESC, ru.id DESC LIMIT ?`,
  );
  const byDay = db.prepare<[number, number], DayCredits>(
    `SELECT strftime('%Y-%m-%d', c.started_at / 1000, 'unixepoch') AS day, ${TOTALS}
     FROM calls c WHERE c.started_at >= ? AND c.started_at < ?
     GROUP BY day ORDER BY day`,
  );
  const byPipeline = db.prepare<[number, number], PipelineCredits>(
    `SELECT p.name AS pipelineName, COUNT(DISTINCT ru.id) AS runs, ${TOTALS}
     FROM calls c JOIN runs ru ON ru.id = c.run_id JOIN pipelines p ON p.id = ru.pipeline_id
     WHERE c.started_at >= ? AND c.started_at < ?
     GROUP BY p.name ORDER BY p.name`,
  );

  return {
    ...createCostReports(db),
    creditsByRun(options = {}) {
      const limit = options.limit ?? 50;
      return options.pipelineName === undefined
        ? byRun.all(limit)
        : byRunOf.all(options.pipelineName, limit);
    },
    creditsByDay: (range = {}) => byDay.all(range.sinceMs ?? 0, range.untilMs ?? FOREVER),
    creditsByPipeline: (range = {}) => byPipeline.all(range.sinceMs ?? 0, range.untilMs ?? FOREVER),
  };
}
