/**
 * The `store` queue in Redis: adding a batch of events as one store job, re-driving jobs that
 * used up their attempts, and counting what still waits to be committed to SQLite.
 */
import { randomUUID } from 'node:crypto';
import type { Job, Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { STORE_JOB_ATTEMPTS } from '../api/backoff.ts';
import type { StoreEvent } from '../events/store.ts';
import { doneSearchJobKeys, markRecordPending } from './inflight.ts';
import { STORE_BACKOFF } from './retry.ts';

/** Makes a batch of events durable; the sink calls it once per flush. */
export type WriteEvents = (events: StoreEvent[]) => Promise<unknown>;

/**
 * The write of a search worker without the database: one `store` job per batch. The search jobs
 * of the tasks it makes done are first marked with its key (inflight.ts RECORD_FIELD).
 */
export function queueWrite(
  storeQueue: Queue,
  redis: Redis,
): (events: StoreEvent[]) => Promise<Job> {
  return async (events) => {
    const jobId = randomUUID();
    const done = doneSearchJobKeys(storeQueue.opts.prefix ?? 'bull', events);
    if (done.length > 0) {
      const storeJobKey = `${storeQueue.qualifiedName}:${jobId}`;
      await markRecordPending(redis, done, storeJobKey);
    }
    return storeQueue.add(
      'events',
      { events },
      {
        jobId,
        removeOnComplete: true,
        // Never deleted: the events may be the only record of calls the service billed.
        removeOnFail: false,
        attempts: STORE_JOB_ATTEMPTS,
        // Delays from storeRetryDelayMs, through the store worker's backoff strategy.
        backoff: { type: STORE_BACKOFF },
      },
    );
  };
}

/**
 * Sends store jobs that used up their attempts back to the queue, with fresh attempts.
 * Returns how many. Called when a store role starts and when a run resumes.
 */
export async function redriveFailedStoreJobs(storeQueue: Queue): Promise<number> {
  let redriven = 0;
  for (;;) {
    const jobs = await storeQueue.getFailed(0, 99);
    if (jobs.length === 0) return redriven;
    for (const job of jobs) {
      await job.retry('failed', { resetAttemptsMade: true, resetAttemptsStarted: true });
      redriven += 1;
    }
  }
}

export interface WaitingRecords {
  /** Store jobs not yet committed (waiting, delayed, active or failed). */
  jobs: number;
  /** Events they carry; null when there are too many jobs to read them all. */
  events: number | null;
  /** Jobs among them that used up their attempts (retried when a store worker starts). */
  failedJobs: number;
}

/** What waits in the store queue to be committed to SQLite. */
export async function waitingRecords(storeQueue: Queue): Promise<WaitingRecords> {
  const states = ['waiting', 'delayed', 'active', 'failed', 'prioritized'] as const;
  const counts = await storeQueue.getJobCounts(...states);
  const jobs = states.reduce((sum, state) => sum + (counts[state] ?? 0), 0);
  let events: number | null = null;
  if (jobs <= 10_000) {
    events = 0;
    for (const job of jobs > 0 ? await storeQueue.getJobs([...states], 0, -1) : []) {
      const list = (job?.data as { events?: unknown[] } | undefined)?.events;
      events += Array.isArray(list) ? list.length : 0;
    }
  }
  return { jobs, events, failedJobs: counts.failed ?? 0 };
}
