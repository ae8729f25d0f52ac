/**
 * The data behind the HTML report's charts, from the same stored calls as the table: credits per
 * UTC day stacked by pipeline, credits per result by pipeline, calls by outcome.
 */
import type { Store } from '../../store/index.ts';

export interface CostCharts {
  /** UTC days, ascending. */
  days: string[];
  pipelines: string[];
  /** Known credits, one array per pipeline (same order), one value per day. */
  creditsByDay: number[][];
  /** Per pipeline: known credits / results (null without results). */
  creditsPerResult: { pipeline: string; value: number | null; credits: number; results: number }[];
  callsByOutcome: { outcome: string; calls: number }[];
  /** Calls whose cost is unknown (not in any credit figure). */
  unknownCostCalls: number;
}

export function buildCostCharts(
  store: Store,
  filter: { runId?: string; sinceMs?: number },
): CostCharts {
  // One read transaction: the charts agree with each other although a run writes meanwhile.
  return store.snapshot(() => chartsFromSnapshot(store, filter));
}

function chartsFromSnapshot(
  store: Store,
  filter: { runId?: string; sinceMs?: number },
): CostCharts {
  const scope = { runId: filter.runId, sinceMs: filter.sinceMs };
  const daily = store.costs({ by: ['day', 'pipeline'], ...scope });
  const days = [...new Set(daily.map((g) => g.keys[0]!))].sort();
  const pipelines = [...new Set(daily.map((g) => g.keys[1]!))].sort();
  const creditsByDay = pipelines.map((p) =>
    days.map((d) => daily.find((g) => g.keys[0] === d && g.keys[1] === p)?.creditsUsed ?? 0),
  );
  const perPipeline = store.costs({ by: ['pipeline'], ...scope }).map((g) => ({
    pipeline: g.keys[0]!,
    value: g.results > 0 ? g.creditsUsed / g.results : null,
    credits: g.creditsUsed,
    results: g.results,
  }));
  const outcomes = store
    .costs({ by: ['outcome'], ...scope })
    .filter((g) => g.calls > 0)
    .map((g) => ({ outcome: g.keys[0]!, calls: g.calls }))
    .sort((a, b) => b.calls - a.calls);
  const [total] = store.costs({ by: [], ...scope });
  return {
    days,
    pipelines,
    creditsByDay,
    creditsPerResult: perPipeline,
    callsByOutcome: outcomes,
    unknownCostCalls: total?.unknownCostCalls ?? 0,
  };
}
