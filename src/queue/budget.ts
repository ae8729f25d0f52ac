/**
 * A run's budget, held across hosts: an atomic Redis counter of credits spent plus credits
 * reserved by calls in flight. A worker reserves a task's worst-case cost before calling the
 * API (`spent + reserved + estimate <= maxCredits`), then settles to what the call really cost.
 *
 * Each reservation is also kept under its call id, so it is settled once. A call of unknown
 * cost counts its worst case against the budget: one with no readable answer settles to it,
 * and one lost with its worker (`lose`) keeps its reservation, under a mark of its own, until
 * its real record arrives after all (then it settles to what it cost). A task the budget
 * refuses only because of calls still in flight waits for them (`settled`) rather than fail.
 */

import type { Redis } from 'ioredis';
import type { Logger } from '../log.ts';
import { MARK_DONE_FUNCTION } from './inflight.ts';
import { evalScript } from './lua.ts';

/**
 * Lua: `reserve(counter, reservations, runId, callId, credits, max)` returns the new total, or
 * -1 (reserving nothing) when it would pass `max`. Also run with a call's rate-limit turn
 * (src/queue/call-claim.ts).
 */
export const RESERVE_FUNCTION = `
local function reserve(counter, reservations, runId, callId, credits, max)
  local total = redis.call('HINCRBY', counter, runId, credits)
  if total > tonumber(max) then
    redis.call('HINCRBY', counter, runId, -tonumber(credits))
    return -1
  end
  redis.call('HSET', reservations, runId .. '|' .. callId, credits)
  return total
end`;

// KEYS: counter, reservations. ARGV: run id, call id, credits, max.
const RESERVE = `${RESERVE_FUNCTION}
return reserve(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[4])`;

// KEYS: counter, reservations, and the journal when the call's entry goes too. ARGV: run id,
// call id, credits used. The reservation may have become a lost call's (LOSE): its record came
// after all, and its worst case gives way to what it cost. With the journal, a call that has
// neither a reservation, nor a lost mark, nor an entry there was settled already: a settle
// tried again because the reply to the first was lost (Redis went away after running it)
// changes nothing, where it would have added the call's credits a second time. KEYS[4]: the
// hash of the call's search job, whose task is done, marked so (inflight.ts DONE_FIELD).
const SETTLE = `${MARK_DONE_FUNCTION}
if KEYS[4] then markDone(KEYS[4]) end
local field = ARGV[1] .. '|' .. ARGV[2]
local reserved = redis.call('HGET', KEYS[2], field)
if reserved then
  redis.call('HDEL', KEYS[2], field)
else
  reserved = redis.call('HGET', KEYS[2], 'lost|' .. field)
  if reserved then
    redis.call('HDEL', KEYS[2], 'lost|' .. field)
  elseif KEYS[3] and redis.call('HEXISTS', KEYS[3], ARGV[2]) == 0 then
    return 0
  end
end
local delta = tonumber(ARGV[3]) - tonumber(reserved or '0')
if delta ~= 0 then redis.call('HINCRBY', KEYS[1], ARGV[1], delta) end
if KEYS[3] then redis.call('HDEL', KEYS[3], ARGV[2]) end
return delta`;

// KEYS: counter, reservations. ARGV: run id, call id. A lost call's reservation stays counted
// (the service may have billed it), kept under 'lost|' so a late record can settle it.
const LOSE = `
local field = ARGV[1] .. '|' .. ARGV[2]
local reserved = redis.call('HGET', KEYS[2], field)
if not reserved then return 0 end
redis.call('HDEL', KEYS[2], field)
redis.call('HSET', KEYS[2], 'lost|' .. field, reserved)
return tonumber(reserved)`;

// KEYS: counter, reservations, journal of calls in flight. ARGV: run id. The counter less the
// reservations of the run's calls still in flight (in the journal): what its calls cost, or may
// have cost (unknown and lost ones at worst). A reservation whose call left the journal without
// settling (its settle failed) stays counted: nothing would ever settle it. Walks the journal
// (the calls in flight of every run, a few hundred at most), not the reservations, which also
// keep every lost call's mark and grow with the prefix's history.
const SETTLED = `
local total = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
local prefix = ARGV[1] .. '|'
local calls = redis.call('HKEYS', KEYS[3])
for i = 1, #calls do
  local reserved = redis.call('HGET', KEYS[2], prefix .. calls[i])
  if reserved then total = total - tonumber(reserved) end
end
return total`;

const RAISE_TO = `
local current = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
if current < tonumber(ARGV[2]) then redis.call('HSET', KEYS[1], ARGV[1], ARGV[2]) end
return 0`;

export interface BudgetKeys {
  /** Hash: run id -> credits spent or reserved. */
  budget: string;
  /** Hash: `runId|callId` -> credits reserved by that call. */
  reservations: string;
}

export interface SettleOptions {
  /** The in-flight journal's key: the call's entry leaves it in the same script. */
  journal?: string;
  /** With `journal`: the hash of the call's search job, whose task is done, marked so. */
  doneJob?: string;
}

export class Budget {
  readonly #redis: Redis;
  readonly #keys: BudgetKeys;

  constructor(redis: Redis, keys: BudgetKeys) {
    this.#redis = redis;
    this.#keys = keys;
  }

  /**
   * Whether reserving `credits` now would pass `maxCredits` (a read, reserving nothing): a task
   * the budget refuses is failed before it takes a turn of the rate limit.
   */
  async wouldExceed(runId: string, credits: number, maxCredits: number): Promise<boolean> {
    const total = Number((await this.#redis.hget(this.#keys.budget, runId)) ?? 0);
    return total + credits > maxCredits;
  }

  /** Reserves `credits` for the call; false when that would pass `maxCredits`. */
  async reserve(
    runId: string,
    callId: string,
    credits: number,
    maxCredits: number,
  ): Promise<boolean> {
    const total = (await evalScript(
      this.#redis,
      RESERVE,
      2,
      this.#keys.budget,
      this.#keys.reservations,
      runId,
      callId,
      credits,
      maxCredits,
    )) as number;
    return total >= 0;
  }

  /**
   * Replaces the call's reservation by the credits it really used (0 when it failed). A call
   * whose reservation was released meanwhile (reaped as LOST) adds `used` to the counter.
   * With `journal` (the in-flight journal's key), the call's entry there is removed in the same
   * script: a call whose record is durable, settled and ended at once, leaves neither behind.
   */
  async settle(
    runId: string,
    callId: string,
    used: number,
    options: SettleOptions = {},
  ): Promise<void> {
    const keys = [this.#keys.budget, this.#keys.reservations];
    if (options.journal !== undefined) {
      keys.push(options.journal);
      if (options.doneJob !== undefined) keys.push(options.doneJob);
    }
    await evalScript(this.#redis, SETTLE, keys.length, ...keys, runId, callId, used);
  }

  /**
   * A call lost with its worker: its reservation stays counted against the budget (the service
   * may have billed it; its cost is unknown), unless its record arrives after all and settles
   * it. Returns the credits it holds.
   */
  async lose(runId: string, callId: string): Promise<number> {
    return (await evalScript(
      this.#redis,
      LOSE,
      2,
      this.#keys.budget,
      this.#keys.reservations,
      runId,
      callId,
    )) as number;
  }

  /**
   * Credits the run's calls account for, without the reservations of its calls still in flight
   * (in the journal `journal`), which settle to what they cost, usually far less.
   */
  async settled(runId: string, journal: string): Promise<number> {
    return (await evalScript(
      this.#redis,
      SETTLED,
      3,
      this.#keys.budget,
      this.#keys.reservations,
      journal,
      runId,
    )) as number;
  }

  /**
   * Raises the counter to at least `credits`, e.g. to what SQLite says was spent when a run
   * resumes after Redis lost its data. Never lowers it: the counter also holds the
   * reservations of calls still in flight, which SQLite knows nothing of yet.
   */
  async raiseTo(runId: string, credits: number): Promise<void> {
    await evalScript(this.#redis, RAISE_TO, 1, this.#keys.budget, runId, credits);
  }
}

/** Background settles of a recorded call's budget while Redis is away: 1 s, doubling, 30 s. */
const SETTLE_RETRY_BASE_MS = 1000;
const SETTLE_RETRY_MAX_MS = 30_000;
const SETTLE_ATTEMPTS = 30;

/**
 * Settles the budget of a call whose record is durable (with `journal`, it also leaves the
 * journal, in the same script). Never throws: Redis failing here (a restart, say) must not fail
 * the job that made the call, which would then run, and be billed, again. A failed settle is
 * logged and tried again in the background; until it goes through, the run's counter holds the
 * call's worst case, which errs on the side of the budget.
 */
export async function settleRecorded(
  budget: Pick<Budget, 'settle'>,
  log: Logger,
  runId: string,
  callId: string,
  spent: number,
  options: SettleOptions = {},
): Promise<void> {
  const again = (failures: number) => {
    const delayMs = Math.min(SETTLE_RETRY_MAX_MS, SETTLE_RETRY_BASE_MS * 2 ** (failures - 1));
    setTimeout(() => {
      budget.settle(runId, callId, spent, options).then(
        () => log.info({ runId, callId }, 'budget settled'),
        (error: unknown) => {
          if (failures + 1 < SETTLE_ATTEMPTS) again(failures + 1);
          else {
            log.error(
              { err: error, runId, callId, spent },
              'could not settle a recorded call with the budget; its worst case stays reserved',
            );
          }
        },
      );
    }, delayMs).unref();
  };
  try {
    await budget.settle(runId, callId, spent, options);
  } catch (error) {
    log.warn(
      { err: error, runId, callId },
      'settling a recorded call with the budget failed; trying again in the background',
    );
    again(1);
  }
}
