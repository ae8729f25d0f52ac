/**
 * Adds a page of a fed run's search jobs and moves the run's cursor past them (feed-state.ts)
 * in one Redis transaction: both happen, or neither. Added first and moved after, a feeder that
 * died in between left a cursor behind jobs already in the queue; the next feeder added them
 * again, which job ids make harmless only while a job is still in Redis. One that had
 * completed and been removed meanwhile ran, and was billed, a second time.
 *
 * The transaction is conditional, as `advance` is: `WATCH` on the lease and the feed entries,
 * a check that `owner` holds the lease and the run's entry is still the one read, then
 * `MULTI` with every job's add script and the cursor's move, `EXEC`. A lease lost or an entry
 * rewritten (a resume, a stop) in between makes `EXEC` add nothing. `WATCH` belongs to a
 * connection, so the jobs go through a BullMQ queue of its own, on a connection of its own.
 */
import { Job, Queue } from 'bullmq';
import type { ChainableCommander, Redis } from 'ioredis';
import type { SearchJob } from './enqueue.ts';
import type { FeedEntry, FeedKeys, StoredFeedEntry } from './feed-state.ts';

/**
 * Tries of a transaction that a watched key written meanwhile made fail. The feed entries are
 * one hash, so another run's entry (registered, moved, removed) fails it too: rare, and the
 * try is three round trips. Past this, the page waits for the next round.
 */
const MAX_TRIES = 50;

export type AdvanceResult = 'moved' | 'changed' | 'not-leader';

export class FeedPages {
  readonly #connection: Redis;
  readonly #queue: Queue;
  readonly #keys: FeedKeys;

  /** `redis` is duplicated: the transactions need a connection nobody else uses. */
  constructor(redis: Redis, queue: { name: string; prefix: string }, keys: FeedKeys) {
    this.#connection = redis.duplicate();
    this.#connection.on('error', () => {}); // Redis going away is said once (src/cli/redis-watch.ts)
    this.#queue = new Queue(queue.name, { connection: this.#connection, prefix: queue.prefix });
    this.#queue.on('error', () => {});
    this.#keys = keys;
  }

  /**
   * Adds `jobs` and moves the run's cursor from `current` to `next` (undefined: its feeding
   * ends), if `owner` holds the lease and the entry is still `current`. Returns 'moved' (both
   * done), 'changed' (someone else wrote the entry; nothing added) or 'not-leader' (nothing
   * added).
   */
  async addAndAdvance(
    owner: string,
    current: StoredFeedEntry,
    jobs: readonly SearchJob[],
    next: FeedEntry | undefined,
  ): Promise<AdvanceResult> {
    const { feederLease, feed } = this.#keys;
    // BullMQ's view of this connection, with its add scripts defined on it.
    const client = await this.#queue.backend.client;
    const entries = jobs.map((j) => new Job(this.#queue, j.name, j.data, j.opts, j.opts.jobId));
    for (let tries = 1; ; tries++) {
      await this.#connection.watch(feederLease, feed);
      const [holder, raw] = await Promise.all([
        this.#connection.get(feederLease),
        this.#connection.hget(feed, current.runId),
      ]);
      if (holder !== owner || raw !== current.raw) {
        await this.#connection.unwatch();
        return holder !== owner ? 'not-leader' : 'changed';
      }
      const multi = client.multi();
      for (const job of entries) {
        // Queued on the transaction at once; its outcome is read from EXEC's replies.
        this.#queue.backend.addJobToTransaction(multi, job.asJSON(), job.id!).catch(() => {});
      }
      if (next === undefined) (multi as unknown as ChainableCommander).hdel(feed, current.runId);
      else multi.hset(feed, { [current.runId]: JSON.stringify(next) });
      const replies = await multi.exec();
      if (replies !== null) {
        // An add script answers a negative code when it refuses a job.
        const failed = replies.find(
          ([error, reply]) => error || (typeof reply === 'number' && reply < 0),
        );
        if (failed)
          throw failed[0] ?? new Error(`adding a search job failed with code ${failed[1]}`);
        return 'moved';
      }
      // A watched key changed: the lease, this entry, or another run's (then try again).
      if (tries >= MAX_TRIES) return 'changed';
    }
  }

  async close(): Promise<void> {
    await this.#queue.close();
    this.#connection.disconnect();
  }
}
