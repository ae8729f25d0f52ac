/**
 * The cost report model: the store's grouped figures (summed from stored calls) plus what follows
 * from them (credits per result, budget use) and, on request, each run's plan estimate beside
 * its actual cost. One model for every format (table, JSON, CSV, HTML).
 */
import { HarvestError, UsageError } from '../../errors.ts';
import {
  type CostFigures,
  type CostGroup,
  type CostGroupRow,
  NO_COSTS,
  type RunCostInfo,
  type Store,
} from '../../store/index.ts';

export interface CostReportOptions {
  /** Default `pipeline`. */
  by?: CostGroup;
  runId?: string;
  /** ms since the epoch. */
  sinceMs?: number;
  /** Put each run's plan estimate beside its cost; needs `by: 'run'`. */
  compareEstimate?: boolean;
  /** ms since the epoch; default now. */
  nowMs?: number;
}

export interface CostRow extends CostFigures {
  /** The group: a pipeline name, run id, UTC day, source set, format set or outcome. */
  key: string;
  /** Known credits per result row; null without results. A floor when costs are unknown. */
  creditsPerResult: number | null;
  /** By run: the run's pipeline, status and creation time (ISO). */
  pipeline?: string;
  status?: string;
  createdAt?: string;
  /** By run: `budget.maxCredits`, null when the run had none. */
  budgetCredits?: number | null;
  /** By run: known credits / budget (1 = all of it); null without a budget. */
  budgetUse?: number | null;
  /** With --compare-estimate: the plan's bounds, null when the run did not record them. */
  estimateMinCredits?: number | null;
  estimateMaxCredits?: number | null;
}

export interface CostReport {
  by: CostGroup;
  filters: { runId: string | null; since: string | null };
  generatedAt: string;
  compareEstimate: boolean;
  rows: CostRow[];
  totals: CostRow;
}

export function derive(key: string, f: CostFigures): CostRow {
  const { calls, failedCalls, creditsUsed, unknownCostCalls, lostCalls, results, runs } = f;
  return {
    key,
    calls,
    failedCalls,
    creditsUsed,
    unknownCostCalls,
    lostCalls,
    retryCalls: f.retryCalls,
    retryCredits: f.retryCredits,
    retryUnknownCalls: f.retryUnknownCalls,
    reissueCalls: f.reissueCalls,
    reissueCredits: f.reissueCredits,
    reissueUnknownCalls: f.reissueUnknownCalls,
    anomalyCalls: f.anomalyCalls,
    anomalyCredits: f.anomalyCredits,
    results,
    runs,
    creditsPerResult: results > 0 ? creditsUsed / results : null,
  };
}

function empty(key: string): CostRow {
  return derive(key, NO_COSTS);
}

function withRun(row: CostRow, run: RunCostInfo | undefined, compare: boolean): CostRow {
  const out: CostRow = { ...row };
  if (run) {
    out.pipeline = run.pipelineName;
    out.status = run.status;
    out.createdAt = new Date(run.createdAt).toISOString();
  }
  out.budgetCredits = run?.maxCredits ?? null;
  out.budgetUse =
    run?.maxCredits != null && run.maxCredits > 0 ? row.creditsUsed / run.maxCredits : null;
  if (compare) {
    out.estimateMinCredits = run?.estimateMinCredits ?? null;
    out.estimateMaxCredits = run?.estimateMaxCredits ?? null;
  }
  return out;
}

function checkOptions(store: Store, o: CostReportOptions, by: CostGroup): void {
  if (o.compareEstimate && by !== 'run') {
    throw new UsageError(
      '--compare-estimate puts each run beside its estimate: use it with --by run',
    );
  }
  if (o.runId !== undefined && store.runs.get(o.runId) === undefined) {
    throw new HarvestError('RUN_NOT_FOUND', `no run ${o.runId} in ${store.path}`, { exitCode: 2 });
  }
}

function rowsBy(store: Store, o: CostReportOptions, by: CostGroup): CostRow[] {
  const groups: CostGroupRow[] = store.costs({ by: [by], runId: o.runId, sinceMs: o.sinceMs });
  const rows = groups.map((g) => derive(g.keys[0] ?? '', g));
  if (by !== 'run') return rows;
  const runs = new Map(store.runInfo(o.runId).map((r) => [r.runId, r]));
  // Without a time window every run is listed, even one that has made no call yet.
  if (o.sinceMs === undefined) {
    for (const id of runs.keys()) if (!rows.some((r) => r.key === id)) rows.push(empty(id));
  }
  return rows
    .map((r) => withRun(r, runs.get(r.key), o.compareEstimate ?? false))
    .sort(
      (a, b) => (a.createdAt ?? '').localeCompare(b.createdAt ?? '') || a.key.localeCompare(b.key),
    );
}

export function buildCostReport(store: Store, options: CostReportOptions = {}): CostReport {
  // One read transaction: the rows, the runs' details and the totals are of the same moment,
  // so the totals row is the sum of the rows although a run writes meanwhile.
  return store.snapshot(() => buildFromSnapshot(store, options));
}

function buildFromSnapshot(store: Store, options: CostReportOptions): CostReport {
  const by = options.by ?? 'pipeline';
  checkOptions(store, options, by);
  const [total] = store.costs({ by: [], runId: options.runId, sinceMs: options.sinceMs });
  return {
    by,
    filters: {
      runId: options.runId ?? null,
      since: options.sinceMs === undefined ? null : new Date(options.sinceMs).toISOString(),
    },
    generatedAt: new Date(options.nowMs ?? Date.now()).toISOString(),
    compareEstimate: options.compareEstimate ?? false,
    rows: rowsBy(store, options, by),
    totals: total ? derive('total', total) : empty('total'),
  };
}
