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

const RAISE_TO = `
local current = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
if current < tonumber(ARGV[2]) then redis.call('HSET', KEYS[1], ARGV[1], ARGV[2]) end
return 0`;

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

  /**
   * Raises the counter to at least `credits`, e.g. to what SQLite says was spent when a run
   * resumes after Redis lost its data. Never lowers it: the counter also holds the
   * reservations of calls still in flight, which SQLite knows nothing of yet.
   */
  async raiseTo(runId: string, credits: number): Promise<void> {
    await this.#redis.eval(RAISE_TO, 1, this.#key, runId, credits);
  }
}
