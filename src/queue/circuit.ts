/**
 * The API circuit, shared by every pool on a prefix through Redis (`keys.apiCircuit`): open
 * while the API host is unreachable. Calls that meet an outage spend no attempt and the search
 * queue pauses (jobs/search/outage.ts); one pool at a time probes the API with capped
 * exponential backoff, and the first probe that gets any HTTP answer closes the circuit.
 *
 * What opens it (the classes of src/api/outage.ts): a call that could not connect (refused, DNS,
 * TLS), or `threshold` 5xx or timeouts in a row from at least `minTasks` tasks with no healthy
 * answer in between. A task whose own calls fail while others are answered is not an outage:
 * the answers clear the row, and the task spends its attempts as before.
 *
 * The hash also holds when a call was last answered (`answeredAt`, any HTTP answer) and last
 * answered healthily (`healthyAt`, not 5xx or 408), each pool writing its own at most once a
 * second: `run --local` tells an API that never answered from one that went away.
 */
import type { Redis } from 'ioredis';
import type { FailureClass, OutageView } from '../api/outage.ts';
import { evalScript } from './lua.ts';
import type { HarvestKeys } from './names.ts';

/** The pause code of the search queue while the circuit is open. */
export const OUTAGE_CODE = 'API_UNREACHABLE';

/** 5xx and timeouts in a row that open the circuit. */
export const DEFAULT_FAILURE_THRESHOLD = 10;
/** Distinct tasks those failures must come from: one task's bad luck is not an outage. */
export const DEFAULT_FAILURE_TASKS = 3;
/** Failures kept in the row, at most. */
const MAX_ROW = 200;
/** How often a pool writes when it was last answered, at most, in ms. */
const PUBLISH_EVERY_MS = 1000;

export interface CircuitState extends OutageView {
  /** Probes that failed since the circuit opened. */
  probes: number;
  /** When the last call or probe failed, ms since the epoch. */
  lastFailureAt: number;
  /** When any pool last got an HTTP answer, ms since the epoch (0: never seen). */
  answeredAt: number;
}

/** What a failed call meant: `opened` or `open` (an outage), or `task` (the call's own trouble). */
export type Verdict = 'opened' | 'open' | 'task';

type CircuitKeys = Pick<HarvestKeys, 'apiCircuit' | 'apiFailures' | 'apiProbeLease'>;

/**
 * KEYS: circuit hash, failure row. ARGV: now, class, row member (`taskKey|callId`), this pool's
 * healthyAt, answeredAt, threshold, minTasks, last error, first probe at. Returns 1 opened,
 * 2 open already, 0 not an outage.
 */
const JUDGE = `
local now = tonumber(ARGV[1])
local healthy = math.max(tonumber(redis.call('HGET', KEYS[1], 'healthyAt') or '0'), tonumber(ARGV[4]))
local answered = math.max(tonumber(redis.call('HGET', KEYS[1], 'answeredAt') or '0'), tonumber(ARGV[5]))
redis.call('HSET', KEYS[1], 'healthyAt', healthy, 'answeredAt', answered)
if redis.call('HEXISTS', KEYS[1], 'openedAt') == 1 then
  redis.call('HSET', KEYS[1], 'lastError', ARGV[8], 'lastFailureAt', now)
  return 2
end
if ARGV[2] == 'flaky' then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', healthy)
  redis.call('ZADD', KEYS[2], now, ARGV[3])
  redis.call('ZREMRANGEBYRANK', KEYS[2], 0, -${MAX_ROW + 1})
  redis.call('PEXPIRE', KEYS[2], 3600000)
  local row = redis.call('ZRANGE', KEYS[2], 0, -1)
  if #row < tonumber(ARGV[6]) then return 0 end
  local tasks, distinct = {}, 0
  for _, member in ipairs(row) do
    local task = string.match(member, '^([^|]*)|')
    if task and not tasks[task] then
      tasks[task] = true
      distinct = distinct + 1
    end
  end
  if distinct < tonumber(ARGV[7]) then return 0 end
end
redis.call('HSET', KEYS[1], 'openedAt', now, 'lastError', ARGV[8], 'lastFailureAt', now,
  'probes', 0, 'nextProbeAt', ARGV[9])
redis.call('DEL', KEYS[2])
return 1
`;

/** KEYS: circuit hash. ARGV: healthyAt, answeredAt. Each field only ever moves forward. */
const PUBLISH = `
for i, field in ipairs({'healthyAt', 'answeredAt'}) do
  local value = tonumber(ARGV[i])
  if value > tonumber(redis.call('HGET', KEYS[1], field) or '0') then
    redis.call('HSET', KEYS[1], field, value)
  end
end
return 1
`;

/** KEYS: circuit hash. ARGV: now, next probe at, last error. Only while open. */
const PROBE_FAILED = `
if redis.call('HEXISTS', KEYS[1], 'openedAt') == 0 then return 0 end
redis.call('HINCRBY', KEYS[1], 'probes', 1)
redis.call('HSET', KEYS[1], 'nextProbeAt', ARGV[2], 'lastError', ARGV[3], 'lastFailureAt', ARGV[1])
return 1
`;

/** KEYS: circuit hash, failure row. ARGV: now. Returns 1 when it was open. */
const CLOSE = `
redis.call('DEL', KEYS[2])
local answered = math.max(tonumber(redis.call('HGET', KEYS[1], 'answeredAt') or '0'), tonumber(ARGV[1]))
redis.call('HSET', KEYS[1], 'answeredAt', answered)
return redis.call('HDEL', KEYS[1], 'openedAt', 'lastError', 'lastFailureAt', 'probes', 'nextProbeAt') > 0 and 1 or 0
`;

export interface CircuitOptions {
  /** 5xx and timeouts in a row that open the circuit. Default DEFAULT_FAILURE_THRESHOLD. */
  threshold?: number;
  /** Distinct tasks they must come from. Default DEFAULT_FAILURE_TASKS. */
  minTasks?: number;
}

export class ApiCircuit {
  readonly #redis: Redis;
  readonly #keys: CircuitKeys;
  readonly #threshold: number;
  readonly #minTasks: number;
  #healthyAt = 0;
  #answeredAt = 0;
  #publishedAt = 0;

  constructor(redis: Redis, keys: CircuitKeys, options: CircuitOptions = {}) {
    this.#redis = redis;
    this.#keys = keys;
    this.#threshold = options.threshold ?? DEFAULT_FAILURE_THRESHOLD;
    this.#minTasks = options.minTasks ?? DEFAULT_FAILURE_TASKS;
  }

  /** A call got an HTTP answer, `healthy` or not. Cheap: Redis hears of it at most once a second. */
  answered(healthy: boolean, nowMs = Date.now()): void {
    this.#answeredAt = nowMs;
    if (healthy) this.#healthyAt = nowMs;
    if (nowMs - this.#publishedAt < PUBLISH_EVERY_MS) return;
    this.#publishedAt = nowMs;
    void evalScript(
      this.#redis,
      PUBLISH,
      1,
      this.#keys.apiCircuit,
      this.#healthyAt,
      this.#answeredAt,
    ).catch(() => {});
  }

  /**
   * A call failed with no healthy answer (`unreachable` or `flaky`): whether that is an outage,
   * opening the circuit if it is one now (its first probe due `firstProbeInMs` later).
   */
  async judge(
    failure: Exclude<FailureClass, 'other'>,
    call: { taskKey: string; callId: string },
    lastError: string,
    firstProbeInMs: number,
    nowMs = Date.now(),
  ): Promise<Verdict> {
    const verdict = await evalScript(
      this.#redis,
      JUDGE,
      2,
      this.#keys.apiCircuit,
      this.#keys.apiFailures,
      nowMs,
      failure,
      `${call.taskKey}|${call.callId}`,
      this.#healthyAt,
      this.#answeredAt,
      this.#threshold,
      this.#minTasks,
      lastError,
      nowMs + firstProbeInMs,
    );
    return verdict === 1 ? 'opened' : verdict === 2 ? 'open' : 'task';
  }

  /** The circuit while it is open; undefined when closed. */
  read(): Promise<CircuitState | undefined> {
    return readCircuit(this.#redis, this.#keys);
  }

  /** A probe failed: the next is due at `nextProbeAt`. */
  async probeFailed(lastError: string, nextProbeAt: number, nowMs = Date.now()): Promise<void> {
    await evalScript(
      this.#redis,
      PROBE_FAILED,
      1,
      this.#keys.apiCircuit,
      nowMs,
      nextProbeAt,
      lastError,
    );
  }

  /** A probe was answered: closes the circuit; true when it was open. */
  async close(nowMs = Date.now()): Promise<boolean> {
    this.#answeredAt = nowMs;
    const closed = await evalScript(
      this.#redis,
      CLOSE,
      2,
      this.#keys.apiCircuit,
      this.#keys.apiFailures,
      nowMs,
    );
    return closed === 1;
  }

  /** The right to probe now, for `ttlMs` at most; false when another pool holds it. */
  async takeProbeLease(owner: string, ttlMs: number): Promise<boolean> {
    return (await this.#redis.set(this.#keys.apiProbeLease, owner, 'PX', ttlMs, 'NX')) === 'OK';
  }

  async releaseProbeLease(): Promise<void> {
    await this.#redis.del(this.#keys.apiProbeLease);
  }
}

/** The circuit while it is open; undefined when closed. For `harvest status` and `run --wait`. */
export async function readCircuit(
  redis: Redis,
  keys: Pick<HarvestKeys, 'apiCircuit'>,
): Promise<CircuitState | undefined> {
  const fields = await redis.hgetall(keys.apiCircuit);
  if (fields.openedAt === undefined) return undefined;
  const num = (text: string | undefined) => (text === undefined ? 0 : Number(text) || 0);
  return {
    since: num(fields.openedAt),
    nextProbeAt: num(fields.nextProbeAt),
    lastError: fields.lastError ?? '',
    probes: num(fields.probes),
    lastFailureAt: num(fields.lastFailureAt),
    answeredAt: num(fields.answeredAt),
  };
}
