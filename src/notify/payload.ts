/**
 * What a finished scheduled run's webhook receives: its summary, its cost, the results new
 * to the pipeline (URLs it saw for the first time in this run), and what changed since the
 * pipeline's previous completed run (src/store/changes/), read from SQLite.
 */
import type { ChangeCounts, ChangedResult, Store } from '../store/index.ts';

export const NOTIFY_EVENT = 'run.finished';

export interface NewResult {
  url: string;
  title: string | null;
  description: string | null;
  source: string;
  taskKey: string;
  position: number;
}

/** A result in the lists of `changes`. */
export interface ChangeItem {
  url: string;
  title: string | null;
  /** The search's name: entry id, query and the fields a matrix varies. */
  search: string;
  source: string;
  /** 1-based rank in this run; null when dropped. */
  rank: number | null;
  /** 1-based rank in the baseline run; null when new. */
  previousRank: number | null;
}

export interface ChangeLists {
  /** The run compared with (the pipeline's previous completed run); null when none. */
  baselineRunId: string | null;
  counts: Omit<ChangeCounts, 'results'>;
  /** At most `maxNewResults` results per list; `truncated` says when a list had more. */
  new: ChangeItem[];
  dropped: ChangeItem[];
  moved: ChangeItem[];
  changed: ChangeItem[];
  truncated: boolean;
}

export interface RunNotification {
  event: typeof NOTIFY_EVENT;
  run: {
    id: string;
    pipeline: string;
    pipelineHash: string;
    status: string;
    trigger: string;
    createdAt: string;
    startedAt: string | null;
    finishedAt: string | null;
  };
  summary: {
    tasks: { total: number; done: number; failed: number };
    results: number;
    /** Results new to the pipeline: URLs first seen in this run. */
    newResults: number;
    /** Failed calls per error code. */
    errors: Record<string, number>;
  };
  cost: {
    calls: number;
    creditsUsed: number;
    unknownCostCalls: number;
    maxCredits: number | null;
  };
  /** The new results, at most `maxNewResults` of them (`newResultsTruncated` says so). */
  newResults: NewResult[];
  newResultsTruncated: boolean;
  /** What changed since the previous completed run; null when it could not be read. */
  changes: ChangeLists | null;
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** The notification of a run; undefined when the run does not exist. */
export function buildNotification(
  store: Store,
  runId: string,
  maxNewResults: number,
): RunNotification | undefined {
  const report = store.runStatus(runId, { recentErrors: 0 });
  if (!report) return undefined;
  const { run, tasks, calls } = report;
  const fresh: NewResult[] = [];
  const urls = new Set<string>();
  let truncated = false;
  for (const row of store.iterateResults({ runId, onlyNew: true })) {
    if (row.url === null || urls.has(row.url)) continue;
    if (fresh.length >= maxNewResults) {
      truncated = true;
      break;
    }
    urls.add(row.url);
    fresh.push({
      url: row.url,
      title: row.title,
      description: row.description,
      source: row.source,
      taskKey: row.taskKey,
      position: row.position,
    });
  }
  return {
    event: NOTIFY_EVENT,
    run: {
      id: run.id,
      pipeline: run.pipelineName,
      pipelineHash: run.pipelineHash,
      status: run.status,
      trigger: run.trigger,
      createdAt: iso(run.createdAt) as string,
      startedAt: iso(run.startedAt),
      finishedAt: iso(run.finishedAt),
    },
    summary: {
      tasks: { total: tasks.total, done: tasks.done, failed: tasks.failed },
      results: report.results,
      newResults: report.newUrls,
      errors: report.errors.callsByCode,
    },
    cost: {
      calls: calls.calls,
      creditsUsed: calls.creditsUsed,
      unknownCostCalls: calls.unknownCostCalls,
      maxCredits: run.maxCredits,
    },
    newResults: fresh,
    newResultsTruncated: truncated,
    changes: changeLists(store, runId, maxNewResults),
  };
}

/** The run's changes, each list capped at `max`; null when they cannot be recorded or read. */
export function changeLists(store: Store, runId: string, max: number): ChangeLists | null {
  let report: ReturnType<Store['changes']['report']>;
  try {
    report = store.changes.report(runId);
  } catch {
    // A webhook still says what it can: the rest of the payload does not depend on this.
    return null;
  }
  if (report === undefined) return null;
  const labels = new Map(report.searches.map((s) => [s.searchKey, s.label]));
  const item = (r: ChangedResult): ChangeItem => ({
    url: r.url,
    title: r.title,
    search: labels.get(r.searchKey) ?? r.searchKey,
    source: r.source,
    rank: r.position === null ? null : r.position + 1,
    previousRank: r.previousPosition === null ? null : r.previousPosition + 1,
  });
  let truncated = false;
  const list = (keep: (r: ChangedResult) => boolean) => {
    const all = report.results.filter(keep);
    if (all.length > max) truncated = true;
    return all.slice(0, max).map(item);
  };
  const { results: _results, ...counts } = report.totals;
  return {
    baselineRunId: report.baselineRunId,
    counts,
    new: list((r) => r.status === 'new'),
    dropped: list((r) => r.status === 'dropped'),
    moved: list(
      (r) =>
        r.position !== null && r.previousPosition !== null && r.position !== r.previousPosition,
    ),
    changed: list((r) => r.status === 'changed'),
    truncated,
  };
}
