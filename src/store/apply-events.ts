/**
 * `applyEvents`: writes a batch of worker events in one immediate transaction, idempotently.
 * Calls are keyed by `callId`, results by (run, task, source, position), and task statuses only
 * move forward, so redelivering a batch (or part of one) changes nothing. A run whose task
 * moved starts (queued -> running) and, once every task has ended, finishes in that transaction.
 */
import type { Database } from 'better-sqlite3';
import type { MediaEvent } from '../events/media.ts';
import { type StoreEvent, StoreEventSchema } from '../events/store.ts';
import type { CallsTable } from './calls.ts';
import type { MediaTable } from './media.ts';
import type { ResultsTable } from './results.ts';
import type { RunsTable } from './runs.ts';
import type { SeenUrlsTable } from './seen-urls.ts';
import type { TasksTable } from './tasks.ts';

export interface RejectedEvent {
  /** Index of the event in the batch. */
  index: number;
  /** What was wrong, one line per issue (`path: message`). */
  issues: string[];
}

export interface ApplyReport {
  /** Calls recorded now. */
  calls: number;
  /** Calls skipped because their `callId` was recorded already. */
  duplicateCalls: number;
  /** Result rows inserted or replaced. */
  results: number;
  /** Results events ignored because a newer response of the task was stored. */
  staleResults: number;
  /** Media rows written (pending downloads) for the results stored. */
  mediaRequested: number;
  /** Task events that changed a task. */
  taskUpdates: number;
  /** Task events ignored: stale (status would go backwards) or for an unknown task. */
  ignoredTaskEvents: number;
  /** Media events that moved a row (others found it no longer pending). */
  mediaUpdates: number;
  /** Events that failed validation; the other events of the batch were applied. */
  rejected: RejectedEvent[];
  /** Runs that had a task change in this batch (started, and finished when done, with it). */
  runsWithTaskChanges: string[];
}

export type ApplyEvents = (events: readonly unknown[]) => ApplyReport;

/**
 * The tables events write, by the names `openStore` gives them; a query over the same tables
 * takes its own `Pick` of these.
 */
export interface Tables {
  runs: RunsTable;
  tasks: TasksTable;
  calls: CallsTable;
  results: ResultsTable;
  seenUrls: SeenUrlsTable;
  media: MediaTable;
}

/**
 * `applyEvents` on `db`. `finishing`, when given, runs last in the batch's transaction with the
 * report (what changes `db.ts` records of the runs the batch finished). One transaction, not a
 * transaction around this one: a nested one is a savepoint, under which SQLite copies every
 * page a statement first writes to a sub-journal, which made each batch about half as fast.
 */
export function createApplyEvents(
  db: Database,
  t: Tables,
  finishing?: (report: ApplyReport) => void,
): ApplyEvents {
  const applyOne = eventApplier(t);
  const write = db.transaction((events: readonly StoreEvent[], report: ApplyReport) => {
    const runs = new Set<string>();
    for (const e of events) applyOne(e, report, runs);
    report.runsWithTaskChanges = [...runs];
    // In the same transaction as the task moves: a batch whose commit ended a run's last task
    // also ends the run. Done after the commit, a process that died in between left the run
    // running for good (the batch delivered again moves no task, so it looked at no run).
    for (const runId of runs) {
      if (t.runs.get(runId)?.status === 'queued') t.runs.setStatus(runId, 'running');
      t.runs.finishIfDone(runId);
    }
    finishing?.(report);
  });

  return (input) => {
    const report = emptyReport();
    const valid = validEvents(input, report.rejected);
    if (valid.length > 0) write.immediate(valid, report);
    return report;
  };
}

function emptyReport(): ApplyReport {
  return {
    calls: 0,
    duplicateCalls: 0,
    results: 0,
    staleResults: 0,
    mediaRequested: 0,
    taskUpdates: 0,
    ignoredTaskEvents: 0,
    mediaUpdates: 0,
    rejected: [],
    runsWithTaskChanges: [],
  };
}

/** The events of `input` that pass validation; the others are added to `rejected`. */
function validEvents(input: readonly unknown[], rejected: RejectedEvent[]): StoreEvent[] {
  const valid: StoreEvent[] = [];
  input.forEach((raw, index) => {
    const parsed = StoreEventSchema.safeParse(raw);
    if (parsed.success) valid.push(parsed.data);
    else {
      const issues = parsed.error.issues.map(
        (i) => `${i.path.join('.') || '(event)'}: ${i.message}`,
      );
      rejected.push({ index, issues });
    }
  });
  return valid;
}

/**
 * Applies one event, counting it in `report`; a task event that moved a task adds its run to
 * `runs`.
 */
function eventApplier(t: Tables): (e: StoreEvent, report: ApplyReport, runs: Set<string>) => void {
  const pipelineName = pipelineNames(t.runs);
  return (e, report, runs) => {
    switch (e.type) {
      case 'call':
        if (t.calls.insert(e)) {
          report.calls += 1;
          if (e.creditsUsed !== null) t.tasks.addCredits(e.runId, e.taskKey, e.creditsUsed);
        } else {
          report.duplicateCalls += 1;
        }
        return;
      case 'results':
        applyResults(t, e, pipelineName(e.runId), report);
        return;
      case 'task':
        if (t.tasks.applyEvent(e)) {
          report.taskUpdates += 1;
          runs.add(e.runId);
        } else {
          report.ignoredTaskEvents += 1;
        }
        return;
      default:
        if (applyMediaEvent(t.media, e)) report.mediaUpdates += 1;
    }
  };
}

/** A run's pipeline name; a run's pipeline never changes, so its name is cached once known. */
function pipelineNames(runs: RunsTable): (runId: string) => string | undefined {
  const pipelineOfRun = new Map<string, string>();
  return (runId) => {
    let name = pipelineOfRun.get(runId);
    if (name === undefined) {
      name = runs.get(runId)?.pipelineName;
      if (name !== undefined) pipelineOfRun.set(runId, name);
    }
    return name;
  };
}

function applyResults(
  t: Tables,
  e: Extract<StoreEvent, { type: 'results' }>,
  pipelineName: string | undefined,
  report: ApplyReport,
): void {
  // Every URL of the response is seen (a stale one too); a stored result keeps its URL's
  // seen_urls row id.
  const seenIds = e.items.map(({ item }) =>
    pipelineName !== undefined && typeof item.url === 'string'
      ? t.seenUrls.touch(pipelineName, item.url, e.fetchedAt, e.runId)
      : undefined,
  );
  const applied = t.results.applyEvent(e, seenIds);
  report.results += applied.written;
  if (applied.stale) report.staleResults += 1;
  // In the same transaction as the results: a stored result never lacks its media rows.
  else report.mediaRequested += t.media.requestFromResults(e);
}

/** Moves a media row as the event says; false when the row was no longer pending. */
function applyMediaEvent(media: MediaTable, e: MediaEvent): boolean {
  switch (e.type) {
    case 'media-saved':
      return media.markSaved(e.mediaId, e, e.at);
    case 'media-ended':
      return media.markEnded(e.mediaId, e.status, e.code, e.message, {
        attempted: e.attempted,
        at: e.at,
      });
    case 'media-refreshed':
      return media.refresh(e.mediaId, e, e.countReissue, e.at);
    case 'media-retry':
      return media.retried(e.mediaId, e.at);
    case 'media-queued':
      return media.markQueued(e.mediaIds, e.at) > 0;
  }
}
