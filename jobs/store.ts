/**
 * The `store` queue's processor: the only SQLite writer. Each job carries the events of many
 * search jobs (group commit) and is applied in one transaction; the writes are idempotent, so
 * a redelivered job never doubles a row. After applying, runs whose every task has ended are
 * marked finished.
 */
import type { Job } from 'bullmq';
import type { Logger } from '../src/log.ts';
import type { Store } from '../src/store/index.ts';

export function createStoreProcessor(store: Store, logger: Logger) {
  return async function processStore(job: Job): Promise<{ applied: number }> {
    // applyEvents validates each event itself; only the envelope is checked here.
    const { events } = job.data as { events?: unknown };
    if (!Array.isArray(events)) throw new Error(`store job ${job.id} carries no events`);
    const report = store.applyEvents(events);
    if (report.rejected.length > 0) {
      // Kept out of SQLite but never silent: the job's log line names every rejected event.
      logger.error({ jobId: job.id, rejected: report.rejected }, 'store events rejected');
    }
    for (const runId of report.runsWithTaskChanges) {
      const run = store.runs.get(runId);
      if (run?.status === 'queued') store.runs.setStatus(runId, 'running');
      store.runs.finishIfDone(runId);
    }
    return { applied: events.length - report.rejected.length };
  };
}
