/**
 * A queue paused for a reason a person can act on, the reason kept beside it in Redis (JSON
 * `{code, reason, at}` under a key of its own) for `harvest status` and `run --wait`:
 * - the search queue, for the API key (401, 402: src/run/key-pause.ts) or an API outage
 *   (jobs/search/outage.ts);
 * - the media queue, for a full disk (./media-pause.ts).
 * One module, so the three pause, resume and read their reasons alike.
 */
import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';

export interface QueuePause {
  code: string;
  reason: string;
  /** When it paused, ms since the epoch (0 when unknown). */
  at: number;
}

/** A stored reason as harvest reads it; a text that is not harvest's is said as it is. */
export function parsePause(raw: string | null): QueuePause | undefined {
  if (raw === null || raw === '') return undefined;
  try {
    const parsed = JSON.parse(raw) as Partial<QueuePause>;
    if (typeof parsed.code === 'string' && typeof parsed.reason === 'string') {
      return { code: parsed.code, reason: parsed.reason, at: Number(parsed.at) || 0 };
    }
  } catch {
    // Not harvest's: said as it is.
  }
  return { code: 'PAUSED', reason: raw.slice(0, 500), at: 0 };
}

/** The reason stored under `key`, whether or not its queue is paused now. */
export async function readPause(redis: Redis, key: string): Promise<QueuePause | undefined> {
  return parsePause(await redis.get(key));
}

/**
 * Why `queue` is paused: its stored reason, `PAUSED` when it was paused without one (by hand,
 * in Redis or a dashboard); undefined when it is not paused.
 */
export async function queuePause(
  queue: Queue,
  redis: Redis,
  key: string,
): Promise<QueuePause | undefined> {
  if (!(await queue.isPaused())) return undefined;
  return (
    (await readPause(redis, key)) ?? {
      code: 'PAUSED',
      reason: `the ${queue.name} queue was paused by hand`,
      at: 0,
    }
  );
}

/**
 * Pauses `queue`, saying why. `keep`: `latest` replaces a reason in force (a key refused again
 * says the latest answer), `first` keeps it (a pause keeps the time it began).
 */
export async function pauseQueue(
  queue: Queue,
  redis: Redis,
  key: string,
  pause: { code: string; reason: string },
  keep: 'latest' | 'first',
): Promise<void> {
  const text = JSON.stringify({ code: pause.code, reason: pause.reason, at: Date.now() });
  if (keep === 'first') await redis.set(key, text, 'NX');
  else await redis.set(key, text);
  await queue.pause();
}

/**
 * Resumes `queue` and clears its reason; returns the pause it ended (undefined when none was
 * stored). With `onlyCode`, does nothing unless the stored reason has that code.
 */
export async function resumeQueue(
  queue: Queue,
  redis: Redis,
  key: string,
  onlyCode?: string,
): Promise<QueuePause | undefined> {
  const pause = await readPause(redis, key);
  if (onlyCode !== undefined && pause?.code !== onlyCode) return undefined;
  await queue.resume();
  await redis.del(key);
  return pause;
}
