/**
 * The data behind the HTML report's charts: per search, the rank of the run's top results over
 * the pipeline's last finished runs (up to the run itself). Searches with the most changes in the
 * run come first; at most `maxSearches` of them.
 */
import { FINISHED_RUN_STATUSES, type Store } from '../../store/index.ts';
import type { ChangeReport } from './build.ts';

export interface RankChart {
  search: string;
  searchKey: string;
  /** One line per URL in the run's top results: 1-based rank per run, null when absent. */
  lines: { url: string; ranks: (number | null)[] }[];
}

export interface ChangeCharts {
  /** Run ids, oldest first; the last is the report's run. */
  runs: string[];
  /** Creation times of `runs`, ISO 8601. */
  runTimes: string[];
  charts: RankChart[];
}

export interface ChartOptions {
  /** Runs shown (default 10). */
  runs?: number;
  /** Top results followed per search (default 10). */
  top?: number;
  /** Searches charted at most (default 24). */
  maxSearches?: number;
}

export function buildChangeCharts(
  store: Store,
  report: ChangeReport,
  options: ChartOptions = {},
): ChangeCharts {
  const runCount = options.runs ?? 10;
  const listed = store.runs.list({ limit: 10_000, pipelineName: report.run.pipeline });
  const at = listed.findIndex((r) => r.id === report.run.id);
  const runs = listed
    .slice(at)
    .filter((r) => FINISHED_RUN_STATUSES.includes(r.status))
    .slice(0, runCount)
    .reverse();
  for (const run of runs) store.changes.ensure(run.id);
  const busiest = [...report.searches]
    .sort((a, b) => changesOf(b) - changesOf(a) || a.label.localeCompare(b.label))
    .slice(0, options.maxSearches ?? 24);
  const keys = new Set(busiest.map((s) => s.searchKey));
  const series = store.changes.ranks(
    runs.map((r) => r.id),
    keys,
    options.top ?? 10,
  );
  const charts = busiest.map((s) => ({
    search: s.label,
    searchKey: s.searchKey,
    lines: series
      .filter((line) => line.searchKey === s.searchKey)
      .sort((a, b) => (a.positions.at(-1) ?? 0) - (b.positions.at(-1) ?? 0))
      .map((line) => ({
        url: line.url,
        ranks: line.positions.map((p) => (p === null ? null : p + 1)),
      })),
  }));
  return {
    runs: runs.map((r) => r.id),
    runTimes: runs.map((r) => new Date(r.createdAt).toISOString()),
    charts,
  };
}

function changesOf(s: ChangeReport['searches'][number]): number {
  return s.new + s.changed + s.dropped + s.movedUp + s.movedDown;
}
