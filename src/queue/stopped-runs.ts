/**
 * Runs their user stopped: `cancelled` (`harvest cancel`) or `interrupted` (Ctrl-C of a local
 * run). Their queued jobs are removed when they stop; a job of theirs that is redelivered or
 * slipped through (a worker that had it in hand, a stalled job) is dropped when it starts, on
 * every host. Only a resume takes a run off this list. Workers read the list once a second,
 * so a stop takes at most that long to reach them; calls already in flight finish and are
 * recorded.
 */
import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { parseSearchJobId, searchJobId } from './names.ts';

export type StopReason = 'cancelled' | 'interrupted';

/** How often a pool reads the list, in ms. */
export const STOPPED_RUNS_REFRESH_MS = 1000;

export class StoppedRuns {
  readonly #redis: Redis;
  readonly #key: string;
  #known = new Map<string, StopReason>();
  #timer: NodeJS.Timeout | undefined;

  constructor(redis: Redis, key: string) {
    this.#redis = redis;
    this.#key = key;
  }

  async stop(runId: string, reason: StopReason): Promise<void> {
    await this.#redis.hset(this.#key, runId, reason);
    this.#known.set(runId, reason);
  }

  /** Takes the run off the list (a resume). */
  async clear(runId: string): Promise<void> {
    await this.#redis.hdel(this.#key, runId);
    this.#known.delete(runId);
  }

  /** Why the run was stopped, as of the last read; undefined while it runs. */
  reason(runId: string): StopReason | undefined {
    return this.#known.get(runId);
  }

  /**
   * Why the run was stopped, read from Redis now when the last read says it was (so a job of a
   * run resumed since is not dropped); no round trip for a running run.
   */
  async confirmedReason(runId: string): Promise<StopReason | undefined> {
    if (!this.#known.has(runId)) return undefined;
    const reason = (await this.#redis.hget(this.#key, runId)) as StopReason | null;
    if (reason === null) this.#known.delete(runId);
    else this.#known.set(runId, reason);
    return reason ?? undefined;
  }

  async refresh(): Promise<void> {
    const all = await this.#redis.hgetall(this.#key);
    this.#known = new Map(Object.entries(all) as [string, StopReason][]);
  }

  /** Reads the list now and then every `intervalMs` until `close`. */
  async watch(intervalMs = STOPPED_RUNS_REFRESH_MS): Promise<void> {
    await this.refresh();
    this.#timer = setInterval(() => void this.refresh().catch(() => {}), intervalMs);
    this.#timer.unref();
  }

  close(): void {
    clearInterval(this.#timer);
  }
}

/**
 * The task keys of a run's jobs waiting in the queue (waiting or paused, prioritized, delayed),
 * read from the queue itself: at most the queue window's worth of ids, however large the run.
 * A fed run's jobs need not lie up to its cursor: a resume restarts the cursor while the
 * window it fed before may still be queued (a queue paused for the API key, say).
 */
export async function queuedTaskKeys(queue: Queue, runId: string): Promise<string[]> {
  return taskKeysIn(queue, runId, ['waiting', 'prioritized', 'delayed']);
}

/**
 * Task keys of the run's jobs in Redis that have not finished: queued, or held by a worker. A
 * resume adds none of these again: each is worked as it is, and one that finished between
 * the resume's reading of SQLite and its adding (a finished job leaves Redis, so its id no
 * longer stops a second one) would otherwise be searched, and billed, twice.
 */
export async function liveTaskKeys(queue: Queue, runId: string): Promise<Set<string>> {
  return new Set(await taskKeysIn(queue, runId, ['waiting', 'prioritized', 'delayed', 'active']));
}

async function taskKeysIn(
  queue: Queue,
  runId: string,
  states: Parameters<Queue['getRanges']>[0],
): Promise<string[]> {
  const ids = await queue.getRanges(states, 0, -1);
  const keys = new Set<string>();
  for (const id of ids) {
    const job = parseSearchJobId(id);
    if (job?.runId === runId) keys.add(job.taskKey);
  }
  return [...keys];
}

/**
 * Removes the queued (waiting, delayed, prioritized) jobs of these tasks; jobs a worker holds
 * stay (their calls finish and are recorded), and so do finished ones (a failed job is kept for
 * days; a resume clears those of its run). Returns how many were removed.
 *
 * BullMQ's remove answers 1 for a job that no longer exists (one that finished and left the
 * queue since the task list was read), and removes a failed job as readily as a queued one, so
 * each job is first looked up and only those in Redis, not finished and not held by a worker
 * (locked) are removed and counted: a task is then counted once, as done, dropped or removed.
 * A held job looked up as queued could finish, and leave the queue, before its removal, which
 * then answered 1 for it too (seen in CI: the 3 calls in flight at a cancel counted twice).
 * Between the lookup and the removal a job could only be miscounted by being taken, called and
 * finished, which takes a whole API call. A lookup that fails leaves its job where it is.
 */
export async function removeQueuedJobs(
  queue: Queue,
  redis: Redis,
  runId: string,
  taskKeys: Iterable<string>,
): Promise<number> {
  let removed = 0;
  let ids: string[] = [];
  const flush = async () => {
    const lookup = redis.pipeline();
    // A job's hash has `timestamp` from its creation, and `finishedOn` once it completed or
    // failed; a worker holding it holds its lock key.
    for (const id of ids) {
      lookup.hmget(queue.toKey(id), 'timestamp', 'finishedOn');
      lookup.exists(`${queue.toKey(id)}:lock`);
    }
    const found = (await lookup.exec()) ?? [];
    const queued = ids.filter((_, i) => {
      const [error, fields] = found[2 * i] ?? [];
      const [lockError, locked] = found[2 * i + 1] ?? [];
      const [created, finished] = (fields ?? []) as (string | null)[];
      return !error && !lockError && created != null && finished == null && locked === 0;
    });
    // 1 when removed, 0 when a worker holds the job.
    const results = await Promise.all(queued.map((id) => queue.remove(id).catch(() => 0)));
    for (const n of results) removed += n;
    ids = [];
  };
  for (const key of taskKeys) {
    ids.push(searchJobId(runId, key));
    if (ids.length >= 500) await flush();
  }
  if (ids.length > 0) await flush();
  return removed;
}
