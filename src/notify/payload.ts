/**
 * What a finished scheduled run's webhook receives: its summary, its cost and the results new
 * to the pipeline (URLs it saw for the first time in this run), read from SQLite.
 */
import type { Store } from '../store/index.ts';

export const NOTIFY_EVENT = 'run.finished';

export interface NewResult {
  url: string;
  title: string | null;
  description: string | null;
  source: string;
  taskKey: string;
  position: number;
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
  };
}
