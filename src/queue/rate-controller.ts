/**
 * The shared rate controller: the pure rules of rate.ts applied to state kept in Redis, so
 * every worker on every host obeys one limit (BullMQ's global rate limit on the search queue).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from '../log.ts';
import {
  INITIAL_RATE_STATE,
  limitFromMessage,
  onLimited,
  onQuiet,
  type RateState,
  startingState,
  toLimiter,
} from './rate.ts';

const LOCK_MS = 1000;
/** How often a 429 tries again for the lock another worker holds, in ms. */
const LOCK_RETRY_MS = 20;
const OBSERVE_WINDOW_MS = 10_000;

export class RateController {
  readonly #redis: Redis;
  readonly #key: string;
  readonly #queue: Queue;
  readonly #logger: Logger;
  #successes: number[] = [];
  #lastQuietCheck = 0;

  constructor(redis: Redis, key: string, searchQueue: Queue, logger: Logger) {
    this.#redis = redis;
    this.#key = key;
    this.#queue = searchQueue;
    this.#logger = logger;
  }

  /** Starts from a known plan limit (run.rateLimitPerMinute), replacing any learned state. */
  async start(rateLimitPerMinute: number | undefined): Promise<void> {
    if (!rateLimitPerMinute) return;
    await this.#write(startingState(rateLimitPerMinute));
  }

  /**
   * A 429: every worker waits `waitMs`, and the allowed rate goes down once per wave. BullMQ
   * honours the wait only while the queue has a global rate limit, which the decrease sets:
   * so a 429 waits for the lock rather than skip its adjustment.
   */
  async onRateLimited(waitMs: number, message: string, nowMs = Date.now()): Promise<void> {
    await this.#queue.rateLimit(waitMs);
    await this.#adjust(
      (s) =>
        onLimited(
          s,
          {
            waitMs,
            limitPerMinute: limitFromMessage(message),
            observedPerSec: this.observedPerSec(nowMs),
          },
          nowMs,
        ),
      { waitForLock: true },
    );
  }

  /** A success; now and then lets the rate grow back towards its ceiling. */
  onSuccess(nowMs = Date.now()): void {
    this.#successes.push(nowMs);
    if (this.#successes.length > 4096) this.#successes.splice(0, 2048);
    if (nowMs - this.#lastQuietCheck < 2000) return;
    this.#lastQuietCheck = nowMs;
    void this.#adjust((s) => onQuiet(s, nowMs)).catch((error: unknown) =>
      this.#logger.warn({ err: error }, 'rate controller: increase failed'),
    );
  }

  observedPerSec(nowMs: number): number {
    const since = nowMs - OBSERVE_WINDOW_MS;
    let n = 0;
    for (let i = this.#successes.length - 1; i >= 0 && this.#successes[i]! >= since; i--) n++;
    return n / (OBSERVE_WINDOW_MS / 1000);
  }

  async state(): Promise<RateState> {
    const raw = await this.#redis.hget(this.#key, 'state');
    return raw ? (JSON.parse(raw) as RateState) : INITIAL_RATE_STATE;
  }

  async #adjust(
    rule: (s: RateState) => RateState,
    options: { waitForLock?: boolean } = {},
  ): Promise<void> {
    for (let tries = 1; ; tries++) {
      const lock = await this.#redis.set(`${this.#key}:lock`, '1', 'PX', LOCK_MS, 'NX');
      if (lock === 'OK') break;
      // Another worker is adjusting right now: an increase can be skipped, a decrease waits.
      if (!options.waitForLock || tries * LOCK_RETRY_MS > 2 * LOCK_MS) return;
      await sleep(LOCK_RETRY_MS);
    }
    try {
      const before = await this.state();
      const after = rule(before);
      if (after !== before) await this.#write(after);
    } finally {
      await this.#redis.del(`${this.#key}:lock`);
    }
  }

  async #write(state: RateState): Promise<void> {
    await this.#redis.hset(this.#key, 'state', JSON.stringify(state));
    if (state.ratePerSec === null) {
      await this.#queue.removeGlobalRateLimit();
      return;
    }
    const { max, durationMs } = toLimiter(state.ratePerSec);
    await this.#queue.setGlobalRateLimit(max, durationMs);
    this.#logger.info(
      { ratePerSec: Number(state.ratePerSec.toFixed(2)), max, durationMs },
      'rate limit adjusted',
    );
  }
}
