/**
 * The media queue paused for a fault of the host that downloads, not of any URL: a full disk
 * (ENOSPC). Downloads would fail one after another and spend their attempts, so the queue
 * pauses, the reason is kept for `harvest status`, and `harvest media retry` resumes it once
 * there is room again.
 */
import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { HarvestKeys } from './names.ts';
import { pauseQueue, type QueuePause, readPause, resumeQueue } from './pause.ts';

/** Why the media queue paused: `MEDIA_DISK_FULL`, and when. */
export type MediaPause = QueuePause;

/** Pauses the media queue, saying why; a pause already in force keeps its first time. */
export function pauseMediaQueue(
  queue: Queue,
  redis: Redis,
  keys: HarvestKeys,
  code: string,
  reason: string,
): Promise<void> {
  return pauseQueue(queue, redis, keys.mediaPausedReason, { code, reason }, 'first');
}

/** Resumes the media queue; the pause it ended, if one was recorded. */
export function resumeMediaQueue(
  queue: Queue,
  redis: Redis,
  keys: HarvestKeys,
): Promise<MediaPause | undefined> {
  return resumeQueue(queue, redis, keys.mediaPausedReason);
}

/** Why the media queue is paused; undefined when it is not paused for a reason. */
export function mediaPauseOf(redis: Redis, keys: HarvestKeys): Promise<MediaPause | undefined> {
  return readPause(redis, keys.mediaPausedReason);
}
