/**
 * A run's budget, held across hosts: an atomic Redis counter of credits spent plus credits
 * reserved by calls in flight. A worker reserves a task's worst-case cost before calling the
 * API (`spent + reserved + estimate <= maxCredits`), then settles to what the call really cost.
 */
import type { Redis } from 'ioredis';

const RESERVE = `
local total = redis.call('HINCRBY', KEYS[1], ARGV[1], ARGV[2])
if total > tonumber(ARGV[3]) then
  redis.call('HINCRBY', KEYS[1], ARGV[1], -tonumber(ARGV[2]))
  return -1
end
return total`;

export class Budget {
  readonly #redis: Redis;
  readonly #key: string;

  constructor(redis: Redis, key: string) {
    this.#redis = redis;
    this.#key = key;
  }

  /** Reserves `credits` for `runId`; false when that would pass `maxCredits`. */
  async reserve(runId: string, credits: number, maxCredits: number): Promise<boolean> {
    const total = (await this.#redis.eval(
      RESERVE,
      1,
      this.#key,
      runId,
      credits,
      maxCredits,
    )) as number;
    return total >= 0;
  }

  /** Replaces a reservation by the credits a call really used (0 when it failed). */
  async settle(runId: string, reserved: number, used: number): Promise<void> {
    if (used !== reserved) await this.#redis.hincrby(this.#key, runId, used - reserved);
  }

  /** Sets the counter, e.g. from SQLite when a run resumes after Redis lost its data. */
  async set(runId: string, credits: number): Promise<void> {
    await this.#redis.hset(this.#key, runId, credits);
  }
}
