/**
 * The media queue paused for a fault of the host that downloads, not of any URL: a full disk
 * (ENOSPC). Downloads would fail one after another and spend their attempts, so the queue
 * pauses, the reason is kept for `harvest status`, and `harvest media retry` resumes it once
 * there is room again.
 */
import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { HarvestKeys } from './names.ts';

export interface MediaPause {
  /** `MEDIA_DISK_FULL`. */
  code: string;
  reason: string;
  /** When it paused, ms since the epoch. */
  at: number;
}

/** Pauses the media queue, saying why; a pause already in force keeps its first time. */
export async function pauseMediaQueue(
  queue: Queue,
  redis: Redis,
  keys: HarvestKeys,
  code: string,
  reason: string,
): Promise<void> {
  const pause: MediaPause = { code, reason, at: Date.now() };
  await redis.set(keys.mediaPausedReason, JSON.stringify(pause), 'NX');
  await queue.pause();
}

/** Resumes the media queue; the pause it ended, if one was recorded. */
export async function resumeMediaQueue(
  queue: Queue,
  redis: Redis,
  keys: HarvestKeys,
): Promise<MediaPause | undefined> {
  const pause = await mediaPauseOf(redis, keys);
  await queue.resume();
  await redis.del(keys.mediaPausedReason);
  return pause;
}

/** Why the media queue is paused; undefined when it is not paused for a reason. */
export async function mediaPauseOf(
  redis: Redis,
  keys: HarvestKeys,
): Promise<MediaPause | undefined> {
  const text = await redis.get(keys.mediaPausedReason);
  if (!text) return undefined;
  try {
    const parsed = JSON.parse(text) as Partial<MediaPause>;
    if (typeof parsed.code === 'string' && typeof parsed.reason === 'string') {
      return { code: parsed.code, reason: parsed.reason, at: Number(parsed.at) || 0 };
    }
  } catch {
    // Not harvest's: said as it is.
  }
  return { code: 'PAUSED', reason: text.slice(0, 500), at: 0 };
}
