/**
 * Earliest deadline first, in BullMQ terms. A media job's priority is its deadline, counted in
 * steps of PRIORITY_STEP_MS from an anchor instant that every process shares (a Redis key):
 * BullMQ runs lower priorities first, so the job whose URL dies first is downloaded first,
 * whenever it was queued and by whichever process.
 *
 * BullMQ priorities are whole numbers up to 2^21 - 1; in steps of 100 ms that spans 58 hours
 * from the anchor. The anchor starts an hour before the first media job, and moves to an hour
 * before now once it is a day old and the media queue holds no waiting or delayed job (then no
 * two jobs in the queue were ranked from different anchors). Deadlines before the anchor rank
 * first; deadlines past the span rank last, in the order they were queued (a queue that never
 * empties for more than a day and a half).
 */
import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';

/** BullMQ's largest priority. */
export const PRIORITY_MAX = 2 ** 21 - 1;
/** One priority step, in ms. */
export const PRIORITY_STEP_MS = 100;
/** How far before now a new anchor is set, in ms. */
export const ANCHOR_LEAD_MS = 3_600_000;
/** Age after which the anchor moves (when the queue allows), in ms. */
export const ANCHOR_MAX_AGE_MS = 24 * 3_600_000;

/** The priority of a job due at `deadlineAt`, counted from `anchorMs`. Pure. */
export function deadlinePriority(deadlineAt: number, anchorMs: number): number {
  const steps = Math.floor((deadlineAt - anchorMs) / PRIORITY_STEP_MS);
  return Math.min(PRIORITY_MAX, Math.max(1, steps + 1));
}

/** The shared anchor: read from Redis, set when missing, moved when old and the queue is idle. */
export class PriorityAnchor {
  readonly #redis: Redis;
  readonly #key: string;
  readonly #queue: Queue;

  constructor(redis: Redis, key: string, queue: Queue) {
    this.#redis = redis;
    this.#key = key;
    this.#queue = queue;
  }

  /** The anchor to rank jobs queued now, in ms since the epoch. */
  async current(nowMs: number): Promise<number> {
    const stored = Number(await this.#redis.get(this.#key));
    if (Number.isFinite(stored) && stored > 0) {
      if (nowMs - stored <= ANCHOR_MAX_AGE_MS || !(await this.#queueIdle())) return stored;
      await this.#redis.set(this.#key, String(nowMs - ANCHOR_LEAD_MS));
      return nowMs - ANCHOR_LEAD_MS;
    }
    // First use: whoever writes first sets it for everyone.
    await this.#redis.set(this.#key, String(nowMs - ANCHOR_LEAD_MS), 'NX');
    return Number(await this.#redis.get(this.#key));
  }

  async #queueIdle(): Promise<boolean> {
    const counts = await this.#queue.getJobCounts('waiting', 'prioritized', 'delayed');
    return Object.values(counts).every((n) => n === 0);
  }
}
