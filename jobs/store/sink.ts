/**
 * Group commit of store events. Concurrent search jobs in one process push their events here;
 * one flush hands all of them to a single write, and every pusher's promise settles when that
 * write is durable. A search job completes only after its events are durable, so a crash can
 * repeat a call but never lose its record.
 *
 * Two writes exist: `queueWrite` adds one `store` job carrying the batch (a search worker
 * without the database), and a process that owns the database hands the batch to its
 * `StoreWriter` (src/store/writer/commit.ts), which spares the events a round trip through Redis.
 */
import { randomUUID } from 'node:crypto';
import type { Job, Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { STORE_JOB_ATTEMPTS } from '../../src/api/backoff.ts';
import type { StoreEvent } from '../../src/events/store.ts';
import { doneSearchJobKeys, markRecordPending } from '../../src/queue/inflight.ts';
import { STORE_BACKOFF } from '../../src/queue/retry.ts';

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

export interface StoreSinkOptions {
  /** Flush at once when this many events are waiting. Default 500. */
  maxBatch?: number;
  /** Longest an event waits for companions before a flush, in ms. Default 2. */
  maxDelayMs?: number;
  /**
   * Writes in flight at once; events pushed meanwhile wait for one to end and go together in
   * the next. Default unbounded. 1 suits a writer that commits one batch at a time anyway (the
   * database's writer): every commit waits for the disk, so batches that queue behind each other
   * cost a commit each, where one batch would cost one.
   */
  maxInFlight?: number;
}

interface Waiter {
  resolve: () => void;
  reject: (error: unknown) => void;
}

export class StoreSink {
  readonly #write: WriteEvents;
  readonly #maxBatch: number;
  readonly #maxDelayMs: number;
  readonly #maxInFlight: number;
  #events: StoreEvent[] = [];
  #waiters: Waiter[] = [];
  #timer: NodeJS.Timeout | undefined;
  #inFlight = new Set<Promise<void>>();

  constructor(write: WriteEvents, options: StoreSinkOptions = {}) {
    this.#write = write;
    this.#maxBatch = options.maxBatch ?? 500;
    this.#maxDelayMs = options.maxDelayMs ?? 2;
    this.#maxInFlight = options.maxInFlight ?? Number.POSITIVE_INFINITY;
  }

  /** Resolves once `events` are durable (in the store queue, or committed). */
  push(events: readonly StoreEvent[]): Promise<void> {
    if (events.length === 0) return Promise.resolve();
    const done = new Promise<void>((resolve, reject) => {
      this.#waiters.push({ resolve, reject });
    });
    this.#events.push(...events);
    if (this.#events.length >= this.#maxBatch) {
      void this.#flushNow();
    } else {
      this.#timer ??= setTimeout(() => void this.#flushNow(), this.#maxDelayMs);
    }
    return done;
  }

  /** Flushes whatever is waiting and waits for every flush under way. */
  async drain(): Promise<void> {
    while (this.#events.length > 0 || this.#inFlight.size > 0) {
      void this.#flushNow();
      await Promise.allSettled([...this.#inFlight]);
    }
  }

  #flushNow(): Promise<void> {
    if (this.#timer) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    if (this.#events.length === 0) return Promise.resolve();
    // Full: the flush that ends next starts this one (#afterFlush).
    if (this.#inFlight.size >= this.#maxInFlight) return Promise.resolve();
    const events = this.#events;
    const waiters = this.#waiters;
    this.#events = [];
    this.#waiters = [];
    // A write that throws synchronously must reject the pushers too, not escape the timer.
    const flush = Promise.resolve()
      .then(() => this.#write(events))
      .then(
        () => {
          for (const w of waiters) w.resolve();
        },
        (error: unknown) => {
          for (const w of waiters) w.reject(error);
        },
      )
      .finally(() => {
        this.#inFlight.delete(flush);
        this.#afterFlush();
      });
    this.#inFlight.add(flush);
    return flush;
  }

  /** Events that waited for a write to end go now. */
  #afterFlush(): void {
    if (this.#events.length > 0 && this.#inFlight.size < this.#maxInFlight) void this.#flushNow();
  }
}
