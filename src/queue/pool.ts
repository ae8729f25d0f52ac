/**
 * A worker pool: BullMQ workers for the roles asked for (`search`, `store`), with the shared
 * pieces they need (API client, group-commit sink, budget, in-flight journal, rate controller),
 * a heartbeat, the reaper of calls lost with dead workers, and a graceful close.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { type Job, Queue, RateLimitError, UnrecoverableError, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { createSearchProcessor, isRecorded, RetryLaterError } from '../../jobs/search.ts';
import { createStoreProcessor, STORE_BATCH_JOBS } from '../../jobs/store.ts';
import type { ApiClient } from '../api/index.ts';
import type { Logger } from '../log.ts';
import type { TaskEvent } from '../store/events.ts';
import { directWriter, type EventWriter, type Store } from '../store/index.ts';
import { StoreWriterThread } from '../store/writer-thread.ts';
import { storeRetryDelayMs } from './backoff.ts';
import { Budget } from './budget.ts';
import { createRedis } from './connection.ts';
import { InflightJournal } from './inflight.ts';
import { harvestKeys, parseSearchJobId, QUEUES } from './names.ts';
import { RateController } from './rate-controller.ts';
import { queueWrite, StoreSink } from './store-sink.ts';

export type Role = 'search' | 'store';

export interface PoolOptions {
  redisUrl: string;
  /** Redis key prefix of every queue. */
  prefix: string;
  roles: readonly Role[];
  /** Search jobs in flight at once in this process. Default 16. */
  concurrency?: number;
  /** Required for the `search` role. */
  client?: ApiClient;
  /** Required for the `store` role: the SQLite database this host owns. */
  store?: Store;
  logger: Logger;
  /** How long a job's lock lives without renewal, in ms; a dead worker's jobs return after it. Default 30000. */
  lockDurationMs?: number;
  /** How often stalled jobs are looked for, in ms. Default 15000. */
  stalledIntervalMs?: number;
  /** How often calls lost with dead workers are looked for, in ms. Default min(5000, lock duration). */
  reapIntervalMs?: number;
  /** Times a search job may come back after its worker died before it fails. Default 100. */
  maxStalledCount?: number;
}

export interface Pool {
  readonly workerId: string;
  /** Finishes the calls in flight, flushes their records, and closes every connection. */
  close(): Promise<void>;
}

/** Pauses the search queue for a reason a human can act on, visible to `harvest status`. */
export async function pauseSearchQueue(
  queue: Queue,
  redis: Redis,
  key: string,
  code: string,
  reason: string,
): Promise<void> {
  await redis.set(key, JSON.stringify({ code, reason, at: Date.now() }));
  await queue.pause();
}

/** The writer thread, or the calling thread when a thread cannot be started here. */
async function startWriterThread(store: Store, log: Logger): Promise<EventWriter> {
  try {
    return await StoreWriterThread.start(store, log);
  } catch (error) {
    log.warn({ err: error }, 'could not start the SQLite writer thread; writing on this thread');
    return directWriter(store);
  }
}

/** Search slots per BullMQ worker (see startPool). */
export const SLOTS_PER_WORKER = 16;

/** Splits `concurrency` into near-equal slices of at most `max`: 40, 16 -> [14, 13, 13]. */
export function splitConcurrency(concurrency: number, max: number): number[] {
  const total = Math.max(1, Math.floor(concurrency));
  const parts = Math.ceil(total / max);
  const base = Math.floor(total / parts);
  return Array.from({ length: parts }, (_, i) => base + (i < total % parts ? 1 : 0));
}

export async function startPool(options: PoolOptions): Promise<Pool> {
  const { prefix, logger } = options;
  const workerId = `${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`;
  const connection = createRedis(options.redisUrl, 'worker');
  const redis = createRedis(options.redisUrl, 'client');
  const keys = harvestKeys(prefix);
  const searchQueue = new Queue(QUEUES.search, { connection, prefix });
  const storeQueue = new Queue(QUEUES.store, { connection, prefix });
  const log = logger.child({ workerId });
  // The database's one writer, when this pool owns it. With the search role too it is a
  // thread (SQLite off the main thread, which keeps calling the API), and this pool's search
  // jobs commit to it directly (durable sooner, no round trip through Redis); the store worker
  // hands it the events of search workers in other processes.
  const writer: EventWriter | undefined =
    options.store && options.roles.includes('store')
      ? options.roles.includes('search')
        ? await startWriterThread(options.store, log)
        : directWriter(options.store)
      : undefined;
  const sink = new StoreSink(
    writer && options.roles.includes('search')
      ? async (events) => {
          const rejected = await writer.write(events);
          // Kept out of SQLite but never silent.
          if (rejected.length > 0) log.error({ rejected }, 'store events rejected');
        }
      : queueWrite(storeQueue),
  );
  const lockDurationMs = options.lockDurationMs ?? 30_000;
  // A worker is dead once it has been silent as long as its jobs' locks last.
  const inflight = new InflightJournal(redis, keys, Math.max(lockDurationMs, 1000));
  const workers: Worker[] = [];
  const timers: NodeJS.Timeout[] = [];
  let heartbeats: NodeJS.Timeout | undefined;

  if (options.roles.includes('search')) {
    if (!options.client) throw new Error('the search role needs an API client');
    const rate = new RateController(redis, keys.rate, searchQueue, log);
    const processor = createSearchProcessor({
      client: options.client,
      sink,
      budget: new Budget(redis, keys.budget),
      inflight,
      rate,
      pause: (code, reason) =>
        pauseSearchQueue(searchQueue, redis, keys.pausedReason, code, reason),
      workerId,
      logger: log,
    });
    // Several BullMQ workers share the concurrency: a BullMQ worker fetches jobs one round
    // trip at a time until all its slots are full and only then starts them, so one worker with
    // 256 slots sits idle for hundreds of ms whenever Redis is busy (while a run is enqueued,
    // say). Slices of SLOTS_PER_WORKER start work after a few round trips.
    for (const slots of splitConcurrency(options.concurrency ?? 16, SLOTS_PER_WORKER)) {
      const worker = new Worker(QUEUES.search, processor, {
        connection,
        prefix,
        concurrency: slots,
        lockDuration: lockDurationMs,
        stalledInterval: options.stalledIntervalMs ?? 15_000,
        // A worker killed mid-call is not the job's fault: let it come back many times.
        maxStalledCount: options.maxStalledCount ?? 100,
        settings: {
          backoffStrategy: (_attempts, _type, error) =>
            error instanceof RetryLaterError ? error.delayMs : 1000,
        },
      });
      worker.on('failed', (job, error) => void recordUnexpectedFailure(job, error));
      worker.on('error', (error) => log.error({ err: error }, 'search worker error'));
      workers.push(worker);
    }

    await inflight.heartbeat(workerId);
    heartbeats = setInterval(
      () => void inflight.heartbeat(workerId).catch(() => {}),
      Math.max(200, Math.floor(inflight.heartbeatTtlMs / 3)),
    );
    timers.push(
      setInterval(
        () =>
          void inflight
            .reap((events) => sink.push(events), Date.now())
            .then((n) => n > 0 && log.warn({ lost: n }, 'recorded calls lost with a dead worker'))
            .catch((error: unknown) => log.warn({ err: error }, 'reaping lost calls failed')),
        options.reapIntervalMs ?? Math.min(5000, inflight.heartbeatTtlMs),
      ),
    );
  }

  if (options.roles.includes('store')) {
    if (!writer) throw new Error('the store role needs the database');
    const worker = new Worker(QUEUES.store, createStoreProcessor(writer, log), {
      connection,
      prefix,
      // Jobs in hand at once; those that arrive together share one transaction.
      concurrency: STORE_BATCH_JOBS,
      maxStalledCount: 100,
      settings: {
        backoffStrategy: (attemptsMade: number) => storeRetryDelayMs(attemptsMade, Math.random),
      },
    });
    worker.on('error', (error) => log.error({ err: error }, 'store worker error'));
    worker.on('failed', (job, error) => {
      const last = job !== undefined && job.attemptsMade >= (job.opts.attempts ?? 1);
      log.error(
        { err: error, jobId: job?.id, attemptsMade: job?.attemptsMade },
        last
          ? 'store job failed for good: its events stay in the failed set of the store queue'
          : 'store job failed; it will be retried',
      );
    });
    workers.push(worker);
  }

  /** Failures the processor did not record itself (stalled too often, a bug, Redis trouble). */
  async function recordUnexpectedFailure(job: Job | undefined, error: Error): Promise<void> {
    if (!job || isRecorded(error) || error instanceof RateLimitError) return;
    const data = job.data as { runId?: string; taskKey?: string };
    const ids =
      data.runId && data.taskKey
        ? { runId: data.runId, taskKey: data.taskKey }
        : job.id
          ? parseSearchJobId(job.id)
          : undefined;
    if (!ids) {
      log.error({ err: error, jobId: job.id }, 'a job harvest did not make failed');
      return;
    }
    const final =
      error instanceof UnrecoverableError || job.attemptsMade >= (job.opts.attempts ?? 1);
    const event: TaskEvent = {
      type: 'task',
      ...ids,
      status: final ? 'failed' : 'retrying',
      attempts: job.attemptsMade,
      // A job whose workers stopped during it more than maxStalledCount times is failed by
      // the next worker that takes it, with BullMQ's reason in `deferredFailure`.
      errorCode: job.deferredFailure ? 'STALLED' : 'WORKER_ERROR',
      errorMessage: error.message,
      at: Date.now(),
    };
    log.error({ err: error, jobId: job.id }, 'search job failed outside the API call');
    await sink
      .push([event])
      .catch((e: unknown) => log.error({ err: e }, 'could not record failure'));
  }

  let closing: Promise<void> | undefined;
  return {
    workerId,
    close() {
      closing ??= (async () => {
        for (const t of timers) clearInterval(t);
        // Search workers first: in-flight calls finish and push their records. The heartbeat
        // goes on until those records are durable: a call may take a minute, and a pool that
        // saw this worker fall silent would record its calls as lost meanwhile.
        await Promise.all(workers.map((w) => (w.name === QUEUES.search ? w.close() : undefined)));
        await sink.drain();
        clearInterval(heartbeats);
        await Promise.all(workers.map((w) => (w.name === QUEUES.store ? w.close() : undefined)));
        await writer?.close();
        await searchQueue.close();
        await storeQueue.close();
        await redis.del(keys.workerHeartbeat(workerId)).catch(() => {});
        await options.client?.close();
        await redis.quit().catch(() => {});
        await connection.quit().catch(() => {});
      })();
      return closing;
    },
  };
}
