/**
 * Where a pool's events go, and how a record is kept until it is durable.
 *
 * | pool                                  | database writer           | its own jobs' events          |
 * |---------------------------------------|---------------------------|-------------------------------|
 * | store role, no search role            | a writer thread           | (none of its own)             |
 * | store and search roles                | a writer thread           | the writer; the store queue   |
 * |                                       |                           | when a commit fails           |
 * | no store role (search on any host)    | none                      | the store queue               |
 *
 * The writer batches writes into transactions itself (src/store/writer/commit.ts); the store
 * queue takes events in batches, one store job per batch (./store/sink.ts). A commit that fails
 * (a locked or full database) does not lose or repeat anything: its events go to the store
 * queue instead, whose jobs retry with capped backoff for over an hour and are kept, not
 * deleted, if even that is not enough.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import pRetry from 'p-retry';
import { backoffDelayMs } from '../src/api/backoff.ts';
import type { StoreEvent } from '../src/events/store.ts';
import type { Logger } from '../src/log.ts';
import { queueWrite } from '../src/queue/store-queue.ts';
import {
  directWriter,
  type EventWriter,
  type Store,
  type WriteOptions,
} from '../src/store/index.ts';
import { StoreWriterThread } from '../src/store/writer/thread.ts';
import { StoreSink } from './store/sink.ts';

/**
 * Longest a pool's own record waits for others to share its transaction, in ms, when none
 * runs: concurrent search jobs of the pool end within a few ms of each other.
 */
export const OWN_RECORDS_WAIT_MS = 2;

/**
 * The database's one writer in this pool: a thread whenever the pool has the store role. With
 * the search role, SQLite then runs on another core than the API calls; without it (a store
 * worker beside search workers on other hosts), commits, which wait for the disk, never block
 * the event loop that takes the next store jobs, renews their locks and feeds the queue window.
 * None without the store role.
 */
export async function databaseWriter(
  store: Store | undefined,
  roles: { store: boolean },
  log: Logger,
): Promise<EventWriter | undefined> {
  if (!store || !roles.store) return undefined;
  try {
    return await StoreWriterThread.start(store, log);
  } catch (error) {
    log.warn({ err: error }, 'could not start the SQLite writer thread; writing on this thread');
    return directWriter(store);
  }
}

/** Where a pool's own records are pushed: each push resolves once its events are durable. */
export interface RecordSink {
  /** Resolves once `events` are durable (committed, or in the store queue). */
  push(events: readonly StoreEvent[]): Promise<void>;
  /** Waits until every push made so far has settled. */
  drain(): Promise<void>;
  /**
   * Redis lost its data: pushes again the call events this sink sent through the store queue
   * lately (`QueuedCalls`), which may have gone with it before the store role committed them.
   * Returns how many.
   */
  resendQueuedCalls(): Promise<number>;
}

/** How long the call events sent through the store queue are kept to be sent again, in ms. */
export const QUEUED_CALLS_KEEP_MS = 10 * 60_000;
/** Most call events kept so (a few hundred bytes each). */
export const QUEUED_CALLS_MAX = 100_000;

/**
 * The call events a pool sent through the store queue lately. Once in the store queue a call's
 * record is durable, and the call leaves the journal; until the store role commits it, it lives
 * only in Redis. Should Redis lose its data meanwhile (a restart without saving, a FLUSHALL),
 * the request the service received would have no call row: these are sent again (the store
 * keeps one row per call id, so one committed already changes nothing). Only call events: the
 * task's results, if lost, are searched again when the run resumes, as before.
 */
export class QueuedCalls {
  readonly #keepMs: number;
  readonly #max: number;
  readonly #calls = new Map<string, { at: number; event: StoreEvent }>();

  constructor(keepMs = QUEUED_CALLS_KEEP_MS, max = QUEUED_CALLS_MAX) {
    this.#keepMs = keepMs;
    this.#max = max;
  }

  /** Keeps the call events of `events`, sent through the store queue at `nowMs`. */
  note(events: readonly StoreEvent[], nowMs: number): void {
    for (const event of events) {
      if (event.type !== 'call') continue;
      this.#calls.delete(event.callId);
      this.#calls.set(event.callId, { at: nowMs, event });
    }
    this.#trim(nowMs);
  }

  /** The call events kept, oldest first. */
  recent(nowMs: number): StoreEvent[] {
    this.#trim(nowMs);
    return [...this.#calls.values()].map((c) => c.event);
  }

  #trim(nowMs: number): void {
    for (const [callId, { at }] of this.#calls) {
      if (at >= nowMs - this.#keepMs && this.#calls.size <= this.#max) return;
      this.#calls.delete(callId);
    }
  }
}

/**
 * This pool's own records: each push a write of its own to the database's writer, which puts
 * those that come together in one transaction, with the store queue as the fallback when a
 * commit fails; without a writer, the store queue, in batches.
 */
export function recordSink(
  writer: EventWriter | undefined,
  storeQueue: Queue,
  redis: Redis,
  log: Logger,
  /** Says once per run the database lacks (src/store/foreign-runs.ts), as the store role does. */
  warnOfForeignRuns: (events: readonly StoreEvent[]) => void = () => {},
): RecordSink {
  const queuedCalls = new QueuedCalls();
  const toQueue = queueWrite(storeQueue, redis);
  const queued = new StoreSink(async (events) => {
    const job = await toQueue(events);
    queuedCalls.note(events, Date.now());
    return job;
  });
  const resend = async (push: (events: readonly StoreEvent[]) => Promise<void>) => {
    const calls = queuedCalls.recent(Date.now());
    if (calls.length > 0) await push(calls);
    return calls.length;
  };
  if (!writer) {
    return {
      push: (events) => queued.push(events),
      drain: () => queued.drain(),
      resendQueuedCalls: () => resend((events) => queued.push(events)),
    };
  }
  const write = committedOrQueued(
    writer,
    { waitMs: OWN_RECORDS_WAIT_MS },
    (events: readonly StoreEvent[]) => queued.push(events),
    log,
    warnOfForeignRuns,
  );
  const writes = awaitable(write);
  return {
    push: writes.push,
    async drain() {
      await writes.drain();
      await queued.drain();
    },
    resendQueuedCalls: () => resend(writes.push),
  };
}

/**
 * `write`, skipping empty batches, with a `drain` that waits until every write made so far has
 * settled (a role's close waits for its last records).
 */
export function awaitable<E extends readonly unknown[]>(
  write: (events: E) => Promise<void>,
): {
  push(events: E): Promise<void>;
  drain(): Promise<void>;
} {
  const writing = new Set<Promise<void>>();
  return {
    push(events) {
      if (events.length === 0) return Promise.resolve();
      const done = write(events);
      const settled = () => writing.delete(done);
      writing.add(done);
      done.then(settled, settled);
      return done;
    },
    async drain() {
      while (writing.size > 0) await Promise.allSettled([...writing]);
    },
  };
}

/** `events` committed by `writer`; to the store queue (`toQueue`) when the commit fails. */
function committedOrQueued<E extends readonly StoreEvent[]>(
  writer: EventWriter,
  options: WriteOptions,
  toQueue: (events: E) => Promise<unknown>,
  log: Logger,
  warnOfForeignRuns: (events: readonly StoreEvent[]) => void,
): (events: E) => Promise<void> {
  return async (events) => {
    warnOfForeignRuns(events);
    let rejected: Awaited<ReturnType<EventWriter['write']>>;
    try {
      rejected = await writer.write(events, options);
    } catch (error) {
      log.warn(
        { err: error, events: events.length },
        'commit failed; the events wait in the store queue, which retries them',
      );
      await toQueue(events);
      return;
    }
    // Kept out of SQLite but never silent.
    if (rejected.length > 0) log.error({ rejected }, 'store events rejected');
  };
}

export interface DurableOptions {
  /** Gives up after this long, in ms (the caller then fails loudly). Default 10 minutes. */
  giveUpAfterMs?: number;
  random?: () => number;
}

/** Longest wait between two tries of a record, in ms. */
const DURABLE_MAX_DELAY_MS = 10_000;

/**
 * `write`, tried again with capped backoff until it succeeds: the events it carries may be the
 * only record of a call the service has billed. Rejects, with the last failure, only after
 * `giveUpAfterMs`.
 */
export function durable(
  write: (events: StoreEvent[]) => Promise<void>,
  log: Logger,
  options: DurableOptions = {},
): (events: StoreEvent[]) => Promise<void> {
  const giveUpAfterMs = options.giveUpAfterMs ?? 10 * 60_000;
  const random = options.random ?? Math.random;
  return (events) =>
    pRetry(() => write(events).catch(carry), {
      retries: Number.POSITIVE_INFINITY,
      maxRetryTime: giveUpAfterMs,
      // p-retry's own delay is zero: the wait is the capped backoff, taken in shouldRetry below.
      minTimeout: 0,
      factor: 1,
      randomize: false,
      shouldRetry: async ({ error, attemptNumber }) => {
        const delayMs = backoffDelayMs({
          attemptsMade: attemptNumber,
          random,
          maxDelayMs: DURABLE_MAX_DELAY_MS,
        });
        log.error(
          { err: carried(error), events: events.length, attempt: attemptNumber, delayMs },
          'could not record events; trying again',
        );
        await sleep(delayMs);
        return true;
      },
    }).catch((error: unknown) => {
      throw carried(error);
    });
}

/**
 * A failed write, carried through p-retry, which gives up at once on a TypeError (a closed
 * database throws one) or a value that is not an Error: every failure here is tried again.
 */
class WriteFailure extends Error {
  readonly failure: unknown;
  constructor(failure: unknown) {
    super('the write failed');
    this.failure = failure;
  }
}

function carry(error: unknown): never {
  throw new WriteFailure(error);
}

function carried(error: unknown): unknown {
  return error instanceof WriteFailure ? error.failure : error;
}
