/**
 * Resuming runs: after a pause, an interruption or a Redis that lost everything. SQLite says
 * which tasks are unfinished; Redis is brought back in line with it (stopped list, budget
 * counter, store backlog, failed jobs) before they are enqueued again.
 */

import { estimateSearchCredits, type SearchRequest } from '../contract/index.ts';
import { HarvestError } from '../errors.ts';
import type { Logger } from '../log.ts';
import { type Pipeline, parsePipeline } from '../pipeline/index.ts';
import { Budget } from '../queue/budget.ts';
import { removeFailedJobs } from '../queue/enqueue.ts';
import { searchJobId } from '../queue/names.ts';
import { resumeQueue } from '../queue/pause.ts';
import { liveTaskKeys, StoppedRuns } from '../queue/stopped-runs.ts';
import { redriveFailedStoreJobs } from '../queue/store-queue.ts';
import { enqueueRun } from './enqueue-run.ts';
import { FeedState } from './feed/state.ts';
import { planComplete, writePlan } from './plan-writer.ts';
import type { Runtime } from './runtime.ts';

export interface ResumeOptions {
  logger: Logger;
  /** Also enqueue the run's failed tasks again. Default false. */
  retryFailed?: boolean;
  /** Called when the run's plan was not written to its end and its rest is being written. */
  onPlanning?: (runId: string) => void;
  /** Stops writing the rest of an unfinished plan (between two batches of tasks). */
  signal?: AbortSignal;
}

export interface ResumedRun {
  runId: string;
  pipeline: Pipeline;
  requeued: number;
  /** Failed tasks put back to queued (`retryFailed`). */
  retried: number;
  /** Store jobs that had failed for good and were sent back to the store queue. */
  redrivenStoreJobs: number;
  /**
   * Stopped (`signal`) while the rest of its plan was written: the run stays `interrupted`,
   * with nothing enqueued; `taskCount` tasks are recorded so far.
   */
  interrupted: boolean;
  /** Tasks of the run recorded. */
  taskCount: number;
}

/**
 * Resumes a run: takes it off the stopped list, un-pauses the search queue, sends failed store
 * jobs back (their records must reach SQLite) and commits the store queue's events here (tasks
 * whose results wait there are not unfinished), raises the budget counter to what SQLite says
 * was spent (a Redis that lost it starts again from there), and re-enqueues every task that
 * has not ended (with `retryFailed`, the failed ones too), within the queue window: a larger
 * run is fed again from its first unfinished task. `requeued` counts the tasks going again.
 * Jobs still in Redis, queued or held by a worker, are left as they are and not added again
 * (`liveTaskKeys`: one that finished meanwhile would be searched twice); the run's failed
 * jobs are removed first, so that their ids are free again. A run stopped while its plan was
 * written gets the rest of its plan first; stopped again (`signal`), it stays interrupted.
 */
export async function resumeRun(
  runtime: Runtime,
  runId: string,
  options: ResumeOptions,
): Promise<ResumedRun> {
  const { store } = runtime;
  const run = store.runs.get(runId);
  if (!run)
    throw new HarvestError('RUN_NOT_FOUND', `no run ${runId} in ${runtime.settings.dbPath}`, {
      exitCode: 2,
    });
  const pipelineRow = store.pipelines.get(run.pipelineId);
  if (!pipelineRow)
    throw new HarvestError('PIPELINE_NOT_FOUND', `run ${runId} has no pipeline row`);
  if (run.status === 'failed' && store.tasks.counts(runId).total === 0) {
    // Its plan was never written (planning failed, or its worker died planning it): there is
    // nothing to continue, and finishing it again would call it completed.
    throw new HarvestError(
      'RUN_NOT_PLANNED',
      `run ${runId} failed before its plan was recorded: start the pipeline again with \`harvest run FILE\``,
      { exitCode: 2 },
    );
  }
  const { pipeline } = parseStoredPipeline(pipelineRow.yamlText, pipelineRow.name);
  const planned = await finishPlan(runtime, runId, pipeline, options);
  if (!planned.complete) {
    store.runs.setStatus(runId, 'interrupted');
    const none = { requeued: 0, retried: 0, redrivenStoreJobs: 0 };
    return { runId, pipeline, ...none, interrupted: true, taskCount: planned.taskCount };
  }
  await new StoppedRuns(runtime.redis, runtime.keys.stoppedRuns).clear(runId);
  if (await runtime.searchQueue.isPaused()) {
    await resumeQueue(runtime.searchQueue, runtime.redis, runtime.keys.pausedReason);
  }
  const { redrivenStoreJobs, committedStoreJobs, retried, requeued } = await whileNotFed(
    runtime,
    runId,
    async (live) => {
      const redrivenStoreJobs = await redriveFailedStoreJobs(runtime.storeQueue);
      const committedStoreJobs = await commitStoreBacklog(runtime);
      // What SQLite says was spent, calls of unknown cost at their task's worst case (as the
      // budget counts them): after a Redis that lost its data, the counter starts from it.
      await new Budget(runtime.redis, runtime.keys).raiseTo(runId, spentAtWorst(runtime, runId));
      const retried = options.retryFailed ? await requeueFailedTasks(runtime, runId) : 0;
      // A failed job keeps its id taken; SQLite, not Redis, says which tasks are unfinished.
      await removeFailedJobs(runtime.searchQueue, runId);
      store.runs.setStatus(runId, 'running');
      const requeued = await enqueueRun(runtime, runId, pipeline, undefined, live);
      return { redrivenStoreJobs, committedStoreJobs, retried, requeued };
    },
  );
  // Pending media is queued again by a media role (jobs a lost Redis took with it included).
  const mediaRequeued = store.media.unqueuePending(runId);
  // Nothing was left to run (or it all ended meanwhile): nobody else would finish the run.
  store.runs.finishIfDone(runId);
  options.logger.info(
    { runId, requeued, retried, redrivenStoreJobs, committedStoreJobs, mediaRequeued },
    'run resumed',
  );
  const taskCount = planned.taskCount;
  return { runId, pipeline, requeued, retried, redrivenStoreJobs, interrupted: false, taskCount };
}

/**
 * Writes the rest of the run's plan when it was not written to its end (stopped, or its
 * planner died), before anything of the run is enqueued: a run is never worked on part of its
 * plan. A complete plan is left as it is.
 */
async function finishPlan(
  runtime: Runtime,
  runId: string,
  pipeline: Pipeline,
  options: Pick<ResumeOptions, 'onPlanning' | 'signal' | 'logger'>,
): Promise<{ complete: boolean; taskCount: number }> {
  if (planComplete(runtime.store, runId)) {
    return { complete: true, taskCount: runtime.store.runs.get(runId)?.taskCount ?? 0 };
  }
  options.onPlanning?.(runId);
  options.logger.info({ runId }, 'writing the rest of the plan');
  return writePlan(runtime.store, runId, pipeline, options.signal);
}

/**
 * The tasks of `runId` whose jobs are in Redis, read before the store backlog is committed and
 * SQLite read: a job in Redis now is worked as it is; one not in Redis now, and finished, has its
 * records in that backlog. The run's feed entry goes first (enqueueRun registers it anew): a
 * feeder adding a page under the old one meanwhile would add jobs the read missed, which, done
 * and removed before the new entry's feeding starts from the first task again, would be added,
 * searched and billed a second time. Its page's transaction now fails instead. Then `body`,
 * which enqueues the run again (registering its feed entry anew). Should it fail before that,
 * the old entry comes back: the run goes on being fed as before the attempt.
 */
async function whileNotFed<T>(
  runtime: Runtime,
  runId: string,
  body: (live: Set<string>) => Promise<T>,
): Promise<T> {
  const feed = new FeedState(runtime.redis, runtime.keys);
  const old = await feed.get(runId);
  await feed.remove(runId);
  try {
    return await body(await liveTaskKeys(runtime.searchQueue, runId));
  } catch (error) {
    if (old && (await feed.get(runId).catch(() => old)) === undefined) {
      await feed.register(runId, old).catch(() => {});
    }
    throw error;
  }
}

/** Store jobs read from Redis at a time. */
const STORE_BACKLOG_PAGE = 200;

/**
 * Commits here the events that search workers without the database handed to the store queue
 * and no store role has committed yet (no store role running, say), without taking the jobs:
 * until then their tasks are unfinished in SQLite, and enqueued again they would be searched,
 * and billed, twice. Events are idempotent, so the store role that commits the same jobs later
 * (or meanwhile) changes nothing more. Returns how many jobs were read.
 */
async function commitStoreBacklog(runtime: Runtime): Promise<number> {
  let jobs = 0;
  // Jobs a store role completes meanwhile leave the lists, so a page may skip some: those are
  // committed already.
  for (let start = 0; ; start += STORE_BACKLOG_PAGE) {
    const page = await runtime.storeQueue.getJobs(
      ['active', 'waiting', 'prioritized', 'delayed'],
      start,
      start + STORE_BACKLOG_PAGE - 1,
    );
    // One transaction a page, as the store role commits jobs that arrive together.
    const events = page.flatMap((job) => {
      const carried = (job?.data as { events?: unknown } | undefined)?.events;
      return Array.isArray(carried) ? carried : [];
    });
    if (events.length > 0) runtime.store.applyEvents(events);
    jobs += page.length;
    if (page.length < STORE_BACKLOG_PAGE) return jobs;
  }
}

/** Failed tasks back to queued, with their count of calls lost to crashed workers cleared. */
async function requeueFailedTasks(runtime: Runtime, runId: string): Promise<number> {
  const keys = runtime.store.tasks.requeueFailed(runId);
  for (let i = 0; i < keys.length; i += 1000) {
    const ids = keys.slice(i, i + 1000).map((key) => searchJobId(runId, key));
    await runtime.redis.hdel(runtime.keys.crashes, ...ids);
  }
  return keys.length;
}

function parseStoredPipeline(text: string, name: string): { pipeline: Pipeline } {
  const result = parsePipeline(text, `${name}.yaml (stored)`);
  if (!result.ok) {
    throw new HarvestError('PIPELINE_INVALID', `the stored pipeline ${name} no longer validates`);
  }
  return { pipeline: result.value };
}

/**
 * Enqueues the run's unfinished tasks again (job ids are derived from run and task, so jobs
 * still in Redis are left as they are) and finishes the run if nothing is left: for a run
 * whose starter died after recording it (or while writing its plan: the rest is written
 * first). Unlike a resume, it leaves paused queues, stopped runs and failed tasks alone.
 */
export async function requeueUnfinished(
  runtime: Runtime,
  runId: string,
  pipeline: Pipeline,
): Promise<number> {
  const run = runtime.store.runs.get(runId);
  if (run?.status !== 'queued' && run?.status !== 'running') return 0;
  if (!planComplete(runtime.store, runId)) await writePlan(runtime.store, runId, pipeline);
  runtime.store.runs.setStatus(runId, 'running');
  const requeued = await whileNotFed(runtime, runId, async (live) => {
    await commitStoreBacklog(runtime);
    return enqueueRun(runtime, runId, pipeline, undefined, live);
  });
  runtime.store.runs.finishIfDone(runId);
  return requeued;
}

/** The run's known credits, plus each call of unknown cost at its task's worst case. */
function spentAtWorst(runtime: Runtime, runId: string): number {
  const { store } = runtime;
  // Implausible creditsUsed counts as the most its request could cost, as the budget counts it.
  const anomalies = store.calls.anomalies(runId);
  let credits =
    store.calls.totals(runId).creditsUsed - anomalies.creditsUsed + anomalies.creditsCounted;
  for (const { taskKey, calls } of store.calls.unknownCostByTask(runId)) {
    const task = store.tasks.get(runId, taskKey);
    if (task) credits += calls * estimateSearchCredits(task.request as SearchRequest).max;
  }
  return credits;
}
