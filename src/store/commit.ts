/**
 * `commitEvents`: applies a batch of worker events in one transaction and marks the runs whose
 * every task has ended as finished. The store queue's processor, the writer thread and a pool
 * that writes in its own thread all commit through this.
 */
import type { ApplyReport } from './apply-events.ts';
import type { Store } from './db.ts';

export function commitEvents(store: Store, events: readonly unknown[]): ApplyReport {
  const report = store.applyEvents(events);
  for (const runId of report.runsWithTaskChanges) {
    const run = store.runs.get(runId);
    if (run?.status === 'queued') store.runs.setStatus(runId, 'running');
    store.runs.finishIfDone(runId);
  }
  return report;
}
