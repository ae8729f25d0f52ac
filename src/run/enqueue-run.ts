/**
 * Putting a run's unfinished tasks in the search queue, within the queue window: a run with
 * no more unfinished tasks than `settings.queueWindow` is enqueued whole (as it always was);
 * a larger one gets what fits the window now, and the feeder (./feeder.ts) enqueues the rest
 * from SQLite, in key order, as jobs end. Redis then holds about a window of jobs whatever
 * the size of the run.
 */
import { estimateSearchCredits, type SearchRequest } from '../contract/index.ts';
import type { Pipeline } from '../pipeline/index.ts';
import { enqueueSearches } from '../queue/enqueue.ts';
import type { SearchJobData } from '../queue/job-data.ts';
import type { UnfinishedTask } from '../store/tasks.ts';
import { FeedState, jobsInQueue } from './feed/state.ts';
import type { Runtime } from './runtime.ts';

/** How long a resumed fed run's set of live task keys is kept, in ms (a day). */
const FEED_LIVE_TTL_MS = 24 * 3600 * 1000;

/** Attempts per task when the pipeline does not say. */
export const DEFAULT_MAX_ATTEMPTS = 5;

/** What every job of a run carries besides its task. */
export interface JobPolicy {
  maxAttempts: number;
  maxCredits?: number;
  /** The run's own rate limit (`run.rateLimitPerMinute`): its calls alone are paced by it. */
  rateLimitPerMinute?: number;
}

export function jobPolicyOf(pipeline: Pipeline): JobPolicy {
  const maxCredits = pipeline.budget?.maxCredits;
  const rateLimitPerMinute = pipeline.run?.rateLimitPerMinute;
  return {
    maxAttempts: pipeline.run?.maxAttempts ?? DEFAULT_MAX_ATTEMPTS,
    ...(maxCredits === undefined ? {} : { maxCredits }),
    ...(rateLimitPerMinute ? { rateLimitPerMinute } : {}),
  };
}

/** The search jobs of these tasks of the run. */
export function* searchJobsOf(
  runId: string,
  tasks: Iterable<Pick<UnfinishedTask, 'key' | 'request'>>,
  policy: JobPolicy,
): Generator<SearchJobData> {
  for (const t of tasks) {
    const request = t.request as SearchRequest;
    yield {
      runId,
      taskKey: t.key,
      request,
      maxAttempts: policy.maxAttempts,
      ...(policy.maxCredits === undefined ? {} : { maxCredits: policy.maxCredits }),
      estimateMaxCredits: estimateSearchCredits(request).max,
      ...(policy.rateLimitPerMinute ? { rateLimitPerMinute: policy.rateLimitPerMinute } : {}),
    };
  }
}

/**
 * Enqueues the run's unfinished tasks (all of them, or what fits the window and a feed entry
 * for the rest). Returns how many tasks go again: enqueued now or fed later. Stops between
 * chunks once `signal` is aborted.
 */
export async function enqueueRun(
  runtime: Runtime,
  runId: string,
  pipeline: Pipeline,
  signal?: AbortSignal,
  /** Tasks whose jobs are in Redis already (`liveTaskKeys`, read before SQLite): not added. */
  live: ReadonlySet<string> = new Set(),
): Promise<number> {
  const { store, searchQueue } = runtime;
  const policy = jobPolicyOf(pipeline);
  const feed = new FeedState(runtime.redis, runtime.keys);
  const counts = store.tasks.counts(runId);
  const unfinished = counts.queued + counts.running + counts.retrying;
  if (unfinished <= runtime.settings.queueWindow) {
    // Everything left fits: no feeding (a resumed run that was fed before stops being fed).
    await feed.remove(runId);
    // The keys handed to the queue, in order: the ones actually added are the first `enqueued`.
    const keys: string[] = [];
    const tasks = (function* () {
      for (const task of store.tasks.unfinished(runId)) {
        if (live.has(task.key)) continue;
        keys.push(task.key);
        yield task;
      }
    })();
    const enqueued = await enqueueSearches(searchQueue, searchJobsOf(runId, tasks, policy), signal);
    const status = store.runs.get(runId)?.status;
    if (enqueued < unfinished && signal?.aborted && (status === 'queued' || status === 'running')) {
      // Stopped enqueuing, not stopping the run (the first Ctrl-C of a run others work): the
      // tasks not reached are fed from the last job added, as a run larger than the window is.
      await feed.register(runId, {
        after: enqueued > 0 ? keys[enqueued - 1]! : '',
        ...policy,
        since: Date.now(),
      });
    }
    return unfinished;
  }
  const room = Math.max(0, runtime.settings.queueWindow - (await jobsInQueue(searchQueue)));
  // The feeder reads SQLite later, from the first task again: it must not add the tasks whose
  // jobs were live at a resume either (one finished since has left Redis while its records may
  // still wait in the store queue). Kept a day at most; a later resume replaces the set.
  const liveKey = runtime.keys.feedLive(runId);
  await runtime.redis.del(liveKey);
  const liveKeys = [...live];
  for (let i = 0; i < liveKeys.length; i += 1000) {
    await runtime.redis.sadd(liveKey, ...liveKeys.slice(i, i + 1000));
  }
  if (liveKeys.length > 0) await runtime.redis.pexpire(liveKey, FEED_LIVE_TTL_MS);
  const first = (room > 0 ? store.tasks.unfinishedAfter(runId, '', room) : []).filter(
    (task) => !live.has(task.key),
  );
  const enqueued = await enqueueSearches(searchQueue, searchJobsOf(runId, first, policy), signal);
  // From the start again on a resume: tasks a stop took out of the queue come back.
  await feed.register(runId, {
    after: enqueued > 0 ? first[enqueued - 1]!.key : '',
    ...policy,
    since: Date.now(),
  });
  return unfinished;
}
