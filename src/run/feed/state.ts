/**
 * What Redis knows of runs fed from SQLite (src/run/feed/feeder.ts): one entry per run larger than
 * the queue window, with the key of the last task enqueued (tasks are fed in key order), and a
 * lease that lets exactly one process feed at a time.
 *
 * | who                       | does                                                          |
 * |---------------------------|---------------------------------------------------------------|
 * | start, resume, requeue    | enqueue what fits the window, then `register` (cursor reset)  |
 * | the feeder (lease holder) | add the next tasks and move the cursor, in one transaction    |
 * |                           | (feed-page.ts), only if the entry is unchanged                |
 * | stop (cancel, Ctrl-C)     | `remove`, after removing the jobs up to the cursor            |
 *
 * `advance` is a compare-and-set on the entry's text, and holds only with the lease: a resume
 * or a stop that changed the entry meanwhile wins, and a feeder that lost its lease (it stalled
 * past the lease's time) changes nothing. The feeder's jobs and its cursor's move go together
 * (feed-page.ts): a cursor left behind jobs already added would have them added again, and
 * one that had completed and left Redis meanwhile would run twice.
 */
import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { z } from 'zod';

export const FeedEntrySchema = z.object({
  /** Key of the last task enqueued; '' before the first. */
  after: z.string(),
  maxAttempts: z.number().int().min(1),
  maxCredits: z.number().int().min(0).optional(),
  rateLimitPerMinute: z.number().int().min(1).optional(),
  /** Set at each register, so a resume's entry never equals the one it replaced. */
  since: z.number(),
});
export type FeedEntry = z.infer<typeof FeedEntrySchema>;

// KEYS: lease, feed. ARGV: owner, run id, expected entry, new entry ('' to delete).
const ADVANCE = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
if redis.call('HGET', KEYS[2], ARGV[2]) ~= ARGV[3] then return 0 end
if ARGV[4] == '' then redis.call('HDEL', KEYS[2], ARGV[2])
else redis.call('HSET', KEYS[2], ARGV[2], ARGV[4]) end
return 1`;

// KEYS: lease, want. ARGV: owner, ttl ms, '1' when the owner asks for the lease before others.
// Takes a free lease or renews one's own, unless another feeder asked for it: then a lease
// held is let go (its holder calls between two rounds) for the asker to take at its next call.
// The first to ask keeps asking; a second asker waits like any feeder.
const HOLD = `
local asker = redis.call('GET', KEYS[2])
if ARGV[3] == '1' and (not asker or asker == ARGV[1]) then
  redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
  asker = ARGV[1]
end
local holder = redis.call('GET', KEYS[1])
if asker and asker ~= ARGV[1] then
  if holder == ARGV[1] then redis.call('DEL', KEYS[1]) end
  return 0
end
if holder == ARGV[1] then redis.call('PEXPIRE', KEYS[1], ARGV[2]) return 1 end
if holder then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1`;

// KEYS: lease, want. ARGV: owner.
const RELEASE = `
if redis.call('GET', KEYS[2]) == ARGV[1] then redis.call('DEL', KEYS[2]) end
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

export interface FeedKeys {
  feed: string;
  feederLease: string;
  feederWant: string;
}

/** A feed entry as stored, with its text (what `advance` compares). */
export interface StoredFeedEntry {
  runId: string;
  raw: string;
  entry: FeedEntry;
}

export class FeedState {
  readonly #redis: Redis;
  readonly #keys: FeedKeys;

  constructor(redis: Redis, keys: FeedKeys) {
    this.#redis = redis;
    this.#keys = keys;
  }

  /** Starts (or restarts, on a resume) feeding a run after `entry.after`. */
  async register(runId: string, entry: FeedEntry): Promise<void> {
    await this.#redis.hset(this.#keys.feed, runId, JSON.stringify(FeedEntrySchema.parse(entry)));
  }

  /** The run's entry; undefined when it is not fed (small, fully fed, or stopped). */
  async get(runId: string): Promise<FeedEntry | undefined> {
    const raw = await this.#redis.hget(this.#keys.feed, runId);
    return raw === null ? undefined : FeedEntrySchema.parse(JSON.parse(raw));
  }

  /** Every run being fed, oldest run first (run ids sort by time). */
  async all(): Promise<StoredFeedEntry[]> {
    const all = await this.#redis.hgetall(this.#keys.feed);
    return Object.entries(all)
      .map(([runId, raw]) => ({ runId, raw, entry: FeedEntrySchema.parse(JSON.parse(raw)) }))
      .sort((a, b) => (a.runId < b.runId ? -1 : a.runId > b.runId ? 1 : 0));
  }

  /**
   * Moves a run's cursor (or, with `next` undefined, ends its feeding) if its entry is still
   * `current` and `owner` holds the lease. Returns 'moved', 'changed' (someone else wrote the
   * entry: it is read again next time) or 'not-leader'.
   */
  async advance(
    owner: string,
    current: StoredFeedEntry,
    next: FeedEntry | undefined,
  ): Promise<'moved' | 'changed' | 'not-leader'> {
    const result = (await this.#redis.eval(
      ADVANCE,
      2,
      this.#keys.feederLease,
      this.#keys.feed,
      owner,
      current.runId,
      current.raw,
      next === undefined ? '' : JSON.stringify(next),
    )) as number;
    return result === 1 ? 'moved' : result === 0 ? 'changed' : 'not-leader';
  }

  async remove(runId: string): Promise<void> {
    await this.#redis.hdel(this.#keys.feed, runId);
  }

  /**
   * Takes the feeder lease if it is free, or renews it if `owner` holds it. Call it only
   * between rounds of feeding: when another feeder asked for the lease, a holder lets go of it
   * here. `preferred`: ask for the lease (for `ttlMs`, renewed at each call) before others.
   */
  async hold(
    owner: string,
    ttlMs: number,
    options: { preferred?: boolean } = {},
  ): Promise<boolean> {
    const { feederLease, feederWant } = this.#keys;
    const asks = options.preferred ? '1' : '0';
    return (
      ((await this.#redis.eval(HOLD, 2, feederLease, feederWant, owner, ttlMs, asks)) as number) ===
      1
    );
  }

  /** Gives up the lease and the ask for it, if `owner` has them. */
  async release(owner: string): Promise<void> {
    await this.#redis.eval(RELEASE, 2, this.#keys.feederLease, this.#keys.feederWant, owner);
  }

  /** Who holds the lease now, if anyone. */
  holder(): Promise<string | null> {
    return this.#redis.get(this.#keys.feederLease);
  }
}

/**
 * Search jobs Redis holds now, of every run: waiting (paused or not), prioritized, delayed (retries in
 * backoff) and active. What the window bounds.
 */
export async function jobsInQueue(queue: Queue): Promise<number> {
  const counts = await queue.getJobCounts('waiting', 'prioritized', 'delayed', 'active');
  return Object.values(counts).reduce((a, b) => a + b, 0);
}
