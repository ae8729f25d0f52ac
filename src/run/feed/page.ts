/**
 * Adds a page of a fed run's search jobs and moves the run's cursor past them (state.ts) in
 * one Redis transaction: both happen, or neither. A cursor left behind jobs already queued
 * would have them added again, and job ids make that harmless only while a job is still in
 * Redis: one completed and removed meanwhile would run, and be billed, twice.
 *
 * The transaction is conditional, as `advance` (state.ts) is: `WATCH` on the lease and the feed
 * entries, a check that `owner` holds the lease and the run's entry is still the one read, then
 * `MULTI` with every job's add script and the cursor's move, `EXEC`. A lease lost or an entry
 * rewritten (a resume, a stop) in between makes `EXEC` add nothing. `WATCH` belongs to a
 * connection, so the jobs go through a BullMQ queue of its own, on a connection of its own.
 */
import { Job, Queue } from 'bullmq';
import type { ChainableCommander, Redis } from 'ioredis';
import type { SearchJob } from '../../queue/enqueue.ts';
import type { FeedEntry, FeedKeys, StoredFeedEntry } from './state.ts';

/**
 * Tries of a transaction that a watched key written meanwhile made fail. The feed entries are
 * one hash, so another run's entry (registered, moved, removed) fails it too: rare, and the
 * try is three round trips. Past this, the page waits for the next round.
 */
const MAX_TRIES = 50;

export type AdvanceResult = 'moved' | 'changed' | 'not-leader';

/** Longest wait for the answer to one command of a page's transaction, in ms. */
const PAGE_COMMAND_TIMEOUT_MS = 10_000;

export class FeedPages {
  readonly #connection: Redis;
  readonly #queue: Queue;
  readonly #keys: FeedKeys;

  /** Connections made so far: a WATCH does not outlive the connection it was sent on. */
  #connections = 0;

  /**
   * `redis` is duplicated: the transactions need a connection nobody else uses. Commands are
   * neither queued while it is down nor sent again after a reconnect: a MULTI sent on a new
   * connection would run without the WATCH sent on the old one. A command whose connection
   * closed before its answer is then dropped by ioredis without being rejected (when the
   * reconnection succeeds): each one times out instead, so the feeder's round ends with an
   * error and the next round starts over, where it would have waited forever.
   */
  constructor(redis: Redis, queue: { name: string; prefix: string }, keys: FeedKeys) {
    this.#connection = redis.duplicate({
      enableOfflineQueue: false,
      autoResendUnfulfilledCommands: false,
      commandTimeout: PAGE_COMMAND_TIMEOUT_MS,
    });
    this.#connection.on('ready', () => {
      this.#connections += 1;
    });
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
      const connection = this.#connections;
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
      // MULTI, every job, the cursor: a job that could not be queued must not be passed over.
      const queued = (multi as unknown as ChainableCommander).length;
      const expected = entries.length + 2;
      if (queued !== expected || connection !== this.#connections) {
        // Nothing of a transaction is sent before EXEC: dropping it is enough.
        await this.#connection.unwatch().catch(() => {});
        if (queued !== expected) {
          throw new Error(`a page of ${entries.length} jobs queued ${queued - 2} commands`);
        }
        continue; // reconnected since the WATCH: it is gone, watch again
      }
      const replies = await multi.exec();
      if (replies !== null) {
        // Redis does not undo a transaction whose command failed: the cursor may have moved
        // past jobs a script refused (a lost script cache, say). Adding them again is harmless
        // (their ids), and puts them where the cursor says they are.
        const failed = replies.find(
          ([error, reply]) => error || (typeof reply === 'number' && reply < 0),
        );
        if (failed) {
          await this.#queue.addBulk([...jobs]);
          throw failed[0] ?? new Error(`adding a search job failed with code ${failed[1]}`);
        }
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
