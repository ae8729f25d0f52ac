/**
 * The `store` queue's processor: hands events to the database's one writer (see
 * src/store/writer/commit.ts). Each job carries the events of many search jobs (group commit in the
 * search worker's sink), and the jobs that arrive within a few ms are applied together in one
 * transaction (group commit here too: a transaction's cost is
 * mostly its commit, so fewer, larger ones keep up with many workers).
 * A job completes only once its events are committed; the writes are idempotent, so a
 * redelivered job never doubles a row. After applying, runs whose every task has ended are
 * marked finished.
 */
import type { Job } from 'bullmq';
import type { Logger } from '../../src/log.ts';
import { foreignRunWarner } from '../../src/store/foreign-runs.ts';
import type { EventWriter, RejectedEvent } from '../../src/store/index.ts';

/** Store jobs in hand at once (the store worker's concurrency), applied together. */
export const STORE_BATCH_JOBS = 16;
/**
 * Longest a store job waits for companions before its transaction, in ms. Search jobs do not
 * wait for this (only for their events to be in the store queue), so it costs progress
 * updates a few ms and saves commits.
 */
export const STORE_BATCH_WINDOW_MS = 5;

interface Pending {
  job: Job;
  events: unknown[];
  resolve: (result: { applied: number }) => void;
  reject: (error: unknown) => void;
}

export interface StoreProcessorOptions {
  /** Flush once this many jobs wait; match the worker's concurrency. Default STORE_BATCH_JOBS. */
  batchJobs?: number;
  /** Default STORE_BATCH_WINDOW_MS. */
  windowMs?: number;
  /**
   * Whether this database has the run. Events of a run it lacks are kept all the same, and
   * said once per run: the run was started against another database (`harvest run` and the
   * worker with different HARVEST_DB or HARVEST_DATA_DIR on one queue prefix).
   */
  hasRun?: (runId: string) => boolean;
  /** The database, to name in that warning. */
  dbPath?: string;
  /**
   * Called with each batch once it is committed, before its jobs complete (the store role marks
   * the search jobs of tasks now done, src/queue/inflight.ts DONE_FIELD, and settles the budgets
   * of the calls). Its failure is logged, not the batch's.
   */
  committed?: (events: readonly unknown[]) => Promise<void>;
}

export function createStoreProcessor(
  writer: EventWriter,
  logger: Logger,
  options: StoreProcessorOptions = {},
) {
  const batchJobs = options.batchJobs ?? STORE_BATCH_JOBS;
  const windowMs = options.windowMs ?? STORE_BATCH_WINDOW_MS;
  let pending: Pending[] = [];
  let timer: NodeJS.Timeout | undefined;
  const warnOfForeignRuns = options.hasRun
    ? foreignRunWarner(options.hasRun, options.dbPath, logger)
    : () => {};

  async function flush(): Promise<void> {
    clearTimeout(timer);
    timer = undefined;
    const batch = pending;
    pending = [];
    const events = batch.flatMap((p) => p.events);
    warnOfForeignRuns(events);
    let rejectedAll: RejectedEvent[];
    try {
      rejectedAll = await writer.write(events);
    } catch (error) {
      for (const p of batch) p.reject(error);
      return;
    }
    await options
      .committed?.(events)
      .catch((error: unknown) =>
        logger.warn({ err: error }, 'could not finish after a commit (job marks, budget settles)'),
      );
    // Hand each job the rejections among its own events (indexes relative to the job).
    let offset = 0;
    let r = 0;
    for (const p of batch) {
      const end = offset + p.events.length;
      const rejected: RejectedEvent[] = [];
      while (r < rejectedAll.length && (rejectedAll[r]?.index ?? end) < end) {
        const { index, issues } = rejectedAll[r++] as RejectedEvent;
        rejected.push({ index: index - offset, issues });
      }
      if (rejected.length > 0) {
        // Kept out of SQLite but never silent: the job's log line names every rejected event.
        logger.error({ jobId: p.job.id, rejected }, 'store events rejected');
      }
      p.resolve({ applied: p.events.length - rejected.length });
      offset = end;
    }
  }

  return function processStore(job: Job): Promise<{ applied: number }> {
    // applyEvents validates each event itself; only the envelope is checked here.
    const { events } = job.data as { events?: unknown };
    if (!Array.isArray(events))
      return Promise.reject(new Error(`store job ${job.id} carries no events`));
    return new Promise((resolve, reject) => {
      pending.push({ job, events, resolve, reject });
      // Every slot is waiting: nothing more can arrive, so waiting longer gains nothing.
      if (pending.length >= batchJobs) void flush();
      else timer ??= setTimeout(() => void flush(), windowMs);
    });
  };
}
