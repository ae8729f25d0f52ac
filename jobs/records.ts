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
 * A commit that fails (a locked or full database) does not lose or repeat anything: its
 * events go to the store queue instead, whose jobs retry with capped backoff for over an hour
 * and are kept, not deleted, if even that is not enough.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { backoffDelayMs } from '../src/api/backoff.ts';
import type { StoreEvent } from '../src/events/store.ts';
import type { Logger } from '../src/log.ts';
import { queueWrite, type WriteEvents } from '../src/queue/store-queue.ts';
import { directWriter, type EventWriter, type Store } from '../src/store/index.ts';
import { StoreWriterThread } from '../src/store/writer/thread.ts';

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

/**
 * The write of this pool's own events: straight to its database writer when it has one, with
 * the store queue as the fallback when a commit fails; else the store queue.
 */
export function writerOrStoreQueue(
  writer: EventWriter | undefined,
  storeQueue: Queue,
  redis: Redis,
  log: Logger,
  /** Says once per run the database lacks (src/store/foreign-runs.ts), as the store role does. */
  warnOfForeignRuns: (events: readonly StoreEvent[]) => void = () => {},
): WriteEvents {
  const toQueue = queueWrite(storeQueue, redis);
  if (!writer) return toQueue;
  return async (events) => {
    warnOfForeignRuns(events);
    let rejected: Awaited<ReturnType<EventWriter['write']>>;
    try {
      rejected = await writer.write(events);
    } catch (error) {
      log.warn(
        { err: error, events: events.length },
        'commit failed; the events wait in the store queue, which retries them',
      );
      return toQueue(events);
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

/**
 * `write`, tried again with capped backoff until it succeeds: the events it carries may be the
 * only record of a call the service has billed. Rejects only after `giveUpAfterMs`.
 */
export function durable(
  write: (events: StoreEvent[]) => Promise<void>,
  log: Logger,
  options: DurableOptions = {},
): (events: StoreEvent[]) => Promise<void> {
  const giveUpAfterMs = options.giveUpAfterMs ?? 10 * 60_000;
  const random = options.random ?? Math.random;
  return async (events) => {
    const startedAt = Date.now();
    for (let attempt = 1; ; attempt++) {
      try {
        return await write(events);
      } catch (error) {
        if (Date.now() - startedAt >= giveUpAfterMs) throw error;
        const delayMs = backoffDelayMs({ attemptsMade: attempt, random, maxDelayMs: 10_000 });
        log.error(
          { err: error, events: events.length, attempt, delayMs },
          'could not record events; trying again',
        );
        await sleep(delayMs);
      }
    }
  };
}
