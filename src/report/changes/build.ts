/**
 * `harvest changes`: what changed in a run since the pipeline's previous completed run (or
 * since a run asked for), per search and in total, with what the run cost per new and per
 * changed result, and the changed results themselves; `detail` adds a unified diff of the
 * markdown of each changed page.
 */
import { createTwoFilesPatch } from 'diff';
import { UsageError } from '../../errors.ts';
import {
  type ChangeCounts,
  type ChangedResult,
  FINISHED_RUN_STATUSES,
  type RunRow,
  type SearchChanges,
  type Store,
} from '../../store/index.ts';

export interface ChangeReportOptions {
  /** The run; default the latest finished run (of `pipelineName` when given). */
  runId?: string;
  /** Compare with this run rather than the previous completed one. */
  sinceRunId?: string;
  pipelineName?: string;
  /** Add the markdown diff of each changed page. */
  detail?: boolean;
}

export interface CostPerChange {
  /** Credits / new results; null without new results. */
  creditsPerNew: number | null;
  /** Credits / changed results; null without changed results. */
  creditsPerChanged: number | null;
}

export interface ListedChange extends ChangedResult {
  /** The search's name (entry id, query, matrix fields). */
  search: string;
  /** 1-based rank in this run (null when dropped). */
  rank: number | null;
  /** 1-based rank in the baseline (null when new). */
  previousRank: number | null;
  /** Places moved up (positive) or down (negative); null when new or dropped. */
  moved: number | null;
  /** Unified diff of the markdown (changed pages, with `detail`). */
  diff?: string;
}

export interface RunRef {
  id: string;
  pipeline: string;
  status: string;
  createdAt: string;
  finishedAt: string | null;
}

export interface ChangeReport {
  run: RunRef;
  /** The run compared with; null when the pipeline had none before. */
  baseline: RunRef | null;
  /** Credits the run's calls were charged (known costs only). */
  credits: number;
  unknownCostCalls: number;
  totals: ChangeCounts & CostPerChange;
  searches: (SearchChanges & CostPerChange)[];
  results: ListedChange[];
  generatedAt: string;
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

function refOf(run: RunRow): RunRef {
  return {
    id: run.id,
    pipeline: run.pipelineName,
    status: run.status,
    createdAt: iso(run.createdAt) as string,
    finishedAt: iso(run.finishedAt),
  };
}

const per = (credits: number, count: number) => (count > 0 ? credits / count : null);

/** The run asked for, or the latest finished one; refuses an unknown or unfinished run. */
export function chooseRun(store: Store, runId?: string, pipelineName?: string): RunRow {
  if (runId !== undefined) {
    const run = store.runs.get(runId);
    if (run === undefined) throw new UsageError(`no run ${runId} in the database`);
    if (!FINISHED_RUN_STATUSES.includes(run.status)) {
      throw new UsageError(`run ${runId} has not finished (it is ${run.status})`);
    }
    return run;
  }
  const runs = store.runs.list({ limit: 1000, pipelineName });
  const run = runs.find((r) => FINISHED_RUN_STATUSES.includes(r.status));
  if (run === undefined) {
    const of = pipelineName === undefined ? '' : ` of pipeline ${pipelineName}`;
    throw new UsageError(`no finished run${of} in the database`);
  }
  return run;
}

export function buildChangeReport(store: Store, options: ChangeReportOptions): ChangeReport {
  const run = chooseRun(store, options.runId, options.pipelineName);
  if (options.sinceRunId !== undefined) {
    const since = store.runs.get(options.sinceRunId);
    if (since === undefined) throw new UsageError(`no run ${options.sinceRunId} in the database`);
    if (since.pipelineName !== run.pipelineName) {
      throw new UsageError(
        `--since-run ${since.id} is a run of ${since.pipelineName}, not of ${run.pipelineName}`,
      );
    }
    chooseRun(store, since.id);
  }
  const found = store.changes.report(run.id, { sinceRunId: options.sinceRunId });
  if (found === undefined) throw new UsageError(`run ${run.id} has not finished`);
  const { creditsUsed, unknownCostCalls } = store.calls.summary(run.id);
  const labels = new Map(found.searches.map((s) => [s.searchKey, s.label]));
  const results = found.results.map((r): ListedChange => {
    const rank = r.position === null ? null : r.position + 1;
    const previousRank = r.previousPosition === null ? null : r.previousPosition + 1;
    return {
      ...r,
      search: labels.get(r.searchKey) ?? r.searchKey,
      rank,
      previousRank,
      moved: rank !== null && previousRank !== null ? previousRank - rank : null,
    };
  });
  const baseline = found.baselineRunId === null ? undefined : store.runs.get(found.baselineRunId);
  if (options.detail && baseline) addDiffs(store, run.id, baseline.id, results);
  return {
    run: refOf(run),
    baseline: baseline ? refOf(baseline) : null,
    credits: creditsUsed,
    unknownCostCalls,
    totals: {
      ...found.totals,
      creditsPerNew: per(creditsUsed, found.totals.new),
      creditsPerChanged: per(creditsUsed, found.totals.changed),
    },
    searches: found.searches.map((s) => ({
      ...s,
      creditsPerNew: per(s.credits, s.new),
      creditsPerChanged: per(s.credits, s.changed),
    })),
    results,
    generatedAt: new Date().toISOString(),
  };
}

/** Adds the markdown diff of each changed page, the baseline's row found by its search. */
function addDiffs(store: Store, runId: string, baselineId: string, rows: ListedChange[]): void {
  const tasksOf = new Map<string, string[]>();
  for (const [task, key] of store.changes.searchesOf(baselineId).keyOf) {
    tasksOf.set(key, [...(tasksOf.get(key) ?? []), task]);
  }
  for (const row of rows) {
    if (row.status !== 'changed' || row.position === null || row.previousPosition === null) {
      continue;
    }
    const now = store.changes.markdownAt({ runId, ...row, position: row.position }) ?? '';
    let before = '';
    for (const taskKey of tasksOf.get(row.searchKey) ?? []) {
      const at = { runId: baselineId, taskKey, source: row.source, position: row.previousPosition };
      const text = store.changes.markdownAt(at);
      if (text !== null) {
        before = text;
        break;
      }
    }
    row.diff = createTwoFilesPatch(`${baselineId}/${row.url}`, `${runId}/${row.url}`, before, now);
  }
}
