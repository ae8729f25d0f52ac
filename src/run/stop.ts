/**
 * Stopping a run before it has finished: `harvest cancel RUN`, or Ctrl-C of a local run. Its
 * queued jobs leave the queue (SQLite still knows every task), jobs a worker holds finish and
 * are recorded, and workers drop any job of the run that reaches them later. Only
 * `harvest run --resume RUN` brings the run back.
 */
import { HarvestError } from '../errors.ts';
import {
  queuedTaskKeys,
  removeQueuedJobs,
  StoppedRuns,
  type StopReason,
} from '../queue/stopped-runs.ts';
import { FINISHED_RUN_STATUSES } from '../store/index.ts';
import { FeedState } from './feed/state.ts';
import type { Runtime } from './runtime.ts';

export interface StoppedRun {
  runId: string;
  status: StopReason;
  /** Queued jobs taken out of the queue. */
  removedJobs: number;
  /** Calls of the run in flight when it stopped; they finish and are recorded. */
  callsInFlight: number;
}

export async function stopRun(
  runtime: Runtime,
  runId: string,
  reason: StopReason,
): Promise<StoppedRun> {
  const { store, redis, keys } = runtime;
  const run = store.runs.get(runId);
  if (!run) {
    throw new HarvestError('RUN_NOT_FOUND', `no run ${runId} in ${runtime.settings.dbPath}`, {
      exitCode: 2,
    });
  }
  if (FINISHED_RUN_STATUSES.includes(run.status)) {
    throw new HarvestError('RUN_FINISHED', `run ${runId} has already finished (${run.status})`, {
      exitCode: 2,
    });
  }
  // First on the list, so no worker starts a job of the run while its jobs are removed.
  await new StoppedRuns(redis, keys.stoppedRuns).stop(runId, reason);
  store.runs.setStatus(runId, reason);
  // A fed run may be far larger than the queue: its jobs are looked for in the queue (a window's
  // worth of ids), not among its unfinished tasks. A run enqueued whole has no more tasks than
  // the window.
  const feed = new FeedState(redis, keys);
  const fed = await feed.get(runId);
  const keysOfRun = fed
    ? await queuedTaskKeys(runtime.searchQueue, runId)
    : (function* () {
        for (const task of store.tasks.unfinished(runId)) yield task.key;
      })();
  const removedJobs = await removeQueuedJobs(runtime.searchQueue, redis, runId, keysOfRun);
  // After the jobs: a feeder round that was adding some meanwhile cannot move the cursor now,
  // and the jobs it added are dropped by the workers (the run is on the stopped list).
  await feed.remove(runId);
  const inflight = await redis.hvals(keys.inflight);
  const callsInFlight = inflight.filter(
    (raw) => (JSON.parse(raw) as { runId?: string }).runId === runId,
  ).length;
  return { runId, status: reason, removedJobs, callsInFlight };
}
