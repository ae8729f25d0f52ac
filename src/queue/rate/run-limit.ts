/**
 * A run's own rate limit (`run.rateLimitPerMinute`): at most that many of the run's calls in any
 * minute, counted in the run's log in Redis (`RUN_ADMIT` of src/queue/rate/scripts.ts), apart
 * from the API key's learned limit (src/queue/rate/controller.ts). It paces that run alone: a
 * call over it waits for the run's next turn while other runs' calls go on.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import type { Logger } from '../../log.ts';
import { evalScript } from '../lua.ts';
import type { HarvestKeys } from '../names.ts';
import { DEFAULT_WINDOW_MS, defaultGuardMs } from './model.ts';
import { RUN_ADMIT } from './scripts.ts';

/** What `turn` says of a call of a run with its own limit. */
export type RunTurn =
  /** The call may go (after waiting `waitMs` here); `member` names its turn (`release`). */
  | { go: true; waitMs: number; member: string }
  /** The run's limit is spent for `waitMs`: the job waits that long, other runs go on. */
  | { go: false; waitMs: number };

/** Counted per minute, with the guard a learned one-minute window has. */
const RUN_SPAN_MS = DEFAULT_WINDOW_MS + defaultGuardMs(DEFAULT_WINDOW_MS);
/** How long an idle run log lives after its span, in ms. */
const LOG_IDLE_MS = 60_000;

export class RunRateLimit {
  readonly #redis: Redis;
  readonly #keys: Pick<HarvestKeys, 'runRateLog' | 'runRateHold'>;
  readonly #logger: Logger;
  readonly #maxHoldMs: number;

  /** `maxHoldMs`: a turn at most this far off is waited for in the worker. */
  constructor(
    redis: Redis,
    keys: Pick<HarvestKeys, 'runRateLog' | 'runRateHold'>,
    logger: Logger,
    maxHoldMs: number,
  ) {
    this.#redis = redis;
    this.#keys = keys;
    this.#logger = logger;
    this.#maxHoldMs = maxHoldMs;
  }

  /** A turn of the run's limit, taken before the key's turn; waits here for a near one. */
  async turn(runId: string, limitPerMinute: number): Promise<RunTurn> {
    const [admitted, waitMs, member] = (await evalScript(
      this.#redis,
      RUN_ADMIT,
      2,
      this.#keys.runRateLog(runId),
      this.#keys.runRateHold(runId),
      limitPerMinute,
      RUN_SPAN_MS,
      this.#maxHoldMs,
      LOG_IDLE_MS,
      randomUUID(),
    )) as [number, number, string];
    if (admitted !== 1) {
      this.#logger.debug({ runId, limitPerMinute, waitMs }, 'run paced by its own limit');
      return { go: false, waitMs };
    }
    if (waitMs > 0) await sleep(waitMs);
    return { go: true, waitMs, member };
  }

  /** Gives back a turn whose call did not go (the key's limit held it). */
  async release(runId: string, member: string): Promise<void> {
    await this.#redis.zrem(this.#keys.runRateLog(runId), member);
  }
}
