/**
 * Calls in flight, journaled in Redis. A call is written here before it is sent (a search's
 * with its rate-limit turn, see call-claim.ts; other calls with `begin`) and removed
 * once its record is durable (in the store queue, or committed to SQLite). When a worker process dies (SIGKILL, power loss)
 * between the two, its heartbeat lapses and any live worker turns the orphaned entries into
 * calls recorded with outcome `LOST` and unknown cost: the service may have billed them, and
 * harvest says so instead of pretending they never happened.
 */
import type { Redis } from 'ioredis';
import type { CallPurpose, StoreEvent } from '../events/store.ts';
import { evalScript } from './lua.ts';
import { type HarvestKeys, QUEUES, searchJobId } from './names.ts';

export interface InflightCall {
  callId: string;
  runId: string;
  taskKey: string;
  attempt: number;
  startedAt: number;
  workerId: string;
  /** Omitted for a task's search. */
  purpose?: CallPurpose;
}

/** A call's entry in the journal (a hash field named by its call id). */
export function journalEntry(call: InflightCall): string {
  return JSON.stringify(call);
}

/** How long a worker's heartbeat lives without renewal, in ms, unless told otherwise. */
export const DEFAULT_HEARTBEAT_TTL_MS = 15_000;

/**
 * Collects the items handed to it during one turn of the event loop and writes them with one
 * command: concurrent jobs then cost Redis one round trip, not one each.
 */
class TickBatch<T> {
  readonly #write: (items: T[]) => Promise<unknown>;
  #items: T[] = [];
  #done: Promise<void> | undefined;

  constructor(write: (items: T[]) => Promise<unknown>) {
    this.#write = write;
  }

  add(item: T): Promise<void> {
    this.#items.push(item);
    this.#done ??= new Promise<void>((resolve, reject) => {
      setImmediate(() => {
        const items = this.#items;
        this.#items = [];
        this.#done = undefined;
        this.#write(items).then(() => resolve(), reject);
      });
    });
    return this.#done;
  }
}

/**
 * The field a search job's hash (BullMQ's `<prefix>:search:<id>`) gets once its task's success
 * is durable. A worker killed after the record but before BullMQ heard the job end leaves the
 * job to come back as stalled; the next worker reads this and ends the job, instead of calling
 * (and being billed) again. Set by the worker with its journal end, and by the store role as it
 * commits the task's record (the worker may die before its own mark); it goes with the job's
 * hash when the job is removed.
 */
export const DONE_FIELD = 'harvest:done';

/**
 * Lua, `markDone(jobKey)`: the field on a job's hash that still exists (a job removed meanwhile
 * must not come back as a stray hash).
 */
export const MARK_DONE_FUNCTION = `
local function markDone(jobKey)
  if redis.call('EXISTS', jobKey) == 1 then redis.call('HSET', jobKey, '${DONE_FIELD}', '1') end
end`;

// KEYS: the journal, then one job hash per call. ARGV: the call ids.
const END_DONE = `${MARK_DONE_FUNCTION}
for i = 2, #KEYS do
  markDone(KEYS[i])
  redis.call('HDEL', KEYS[1], ARGV[i - 1])
end
return #KEYS - 1`;

// KEYS: job hashes.
const MARK_DONE = `${MARK_DONE_FUNCTION}
for i = 1, #KEYS do markDone(KEYS[i]) end
return #KEYS`;

/** Marks the search jobs at `jobKeys` done (DONE_FIELD), those that still exist. */
export async function markJobsDone(redis: Redis, jobKeys: readonly string[]): Promise<void> {
  if (jobKeys.length > 0) await evalScript(redis, MARK_DONE, jobKeys.length, ...jobKeys);
}

/**
 * The field a search job's hash gets just before its task's success goes to the store queue (a
 * worker without the database): the key of that store job. A worker killed between that add and
 * its own done mark leaves the job to come back as stalled, maybe long before the store role
 * commits the record (and marks the job done): the job finds its record waiting in the store
 * queue, and ends instead of calling again. Goes with the job's hash.
 */
export const RECORD_FIELD = 'harvest:record';

// KEYS: job hashes. ARGV: the store job's key.
const MARK_RECORD = `for i = 1, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 1 then redis.call('HSET', KEYS[i], '${RECORD_FIELD}', ARGV[1]) end
end
return #KEYS`;

/** Marks the search jobs at `jobKeys` (those that still exist) as recorded by the store job at `storeJobKey`. */
export async function markRecordPending(
  redis: Redis,
  jobKeys: readonly string[],
  storeJobKey: string,
): Promise<void> {
  if (jobKeys.length > 0) {
    await evalScript(redis, MARK_RECORD, jobKeys.length, ...jobKeys, storeJobKey);
  }
}

/** The hashes of the search jobs (under the queue prefix `prefix`) whose tasks `events` make done. */
export function doneSearchJobKeys(prefix: string, events: readonly unknown[]): string[] {
  const keys: string[] = [];
  for (const e of events) {
    const t = e as { type?: unknown; status?: unknown; runId?: unknown; taskKey?: unknown };
    if (t.type !== 'task' || t.status !== 'done') continue;
    if (typeof t.runId !== 'string' || typeof t.taskKey !== 'string') continue;
    keys.push(`${prefix}:${QUEUES.search}:${searchJobId(t.runId, t.taskKey)}`);
  }
  return keys;
}

export class InflightJournal {
  readonly #redis: Redis;
  readonly #keys: HarvestKeys;
  readonly #heartbeatTtlMs: number;
  readonly #begins: TickBatch<InflightCall>;
  readonly #ends: TickBatch<string>;
  readonly #done: TickBatch<{ callId: string; jobKey: string }>;

  /** `heartbeatTtlMs`: a worker silent this long is dead and its calls are reaped. */
  constructor(redis: Redis, keys: HarvestKeys, heartbeatTtlMs = DEFAULT_HEARTBEAT_TTL_MS) {
    this.#redis = redis;
    this.#keys = keys;
    this.#heartbeatTtlMs = heartbeatTtlMs;
    this.#begins = new TickBatch((calls) =>
      redis.hset(keys.inflight, ...calls.flatMap((c) => [c.callId, journalEntry(c)])),
    );
    this.#ends = new TickBatch((callIds) => redis.hdel(keys.inflight, ...callIds));
    this.#done = new TickBatch((ends) =>
      evalScript(
        redis,
        END_DONE,
        ends.length + 1,
        keys.inflight,
        ...ends.map((e) => e.jobKey),
        ...ends.map((e) => e.callId),
      ),
    );
  }

  get heartbeatTtlMs(): number {
    return this.#heartbeatTtlMs;
  }

  /** Calls journaled and not yet recorded, across all workers. */
  pending(): Promise<number> {
    return this.#redis.hlen(this.#keys.inflight);
  }

  /** Resolves once the call is journaled: only then may it be sent. */
  begin(call: InflightCall): Promise<void> {
    return this.#begins.add(call);
  }

  /** Removes a call whose record is durable. */
  end(callId: string): Promise<void> {
    return this.#ends.add(callId);
  }

  /**
   * Removes the call of a search whose task is done, its record durable, and marks its job
   * done (DONE_FIELD), in one script.
   */
  endDone(callId: string, jobKey: string): Promise<void> {
    return this.#done.add({ callId, jobKey });
  }

  /**
   * Whether the search job at `jobKey` is marked done (DONE_FIELD), or its success waits in the
   * store queue (RECORD_FIELD names a store job still there).
   */
  async recordedDone(jobKey: string): Promise<boolean> {
    const [done, record] = await this.#redis.hmget(jobKey, DONE_FIELD, RECORD_FIELD);
    if (done !== null) return true;
    if (!record) return false;
    if ((await this.#redis.exists(record)) === 1) return true;
    // Gone: never added (the worker died first), or committed and removed since, in which case
    // the store role marked the job done before.
    return (await this.#redis.hexists(jobKey, DONE_FIELD)) === 1;
  }

  /** The calls journaled by one worker and not yet recorded. */
  async ofWorker(workerId: string): Promise<InflightCall[]> {
    const all = await this.#redis.hvals(this.#keys.inflight);
    return all.map((raw) => JSON.parse(raw) as InflightCall).filter((c) => c.workerId === workerId);
  }

  /** Removes calls recorded by other means (e.g. as LOST by a worker forced to stop). */
  async forget(callIds: readonly string[]): Promise<void> {
    if (callIds.length > 0) await this.#redis.hdel(this.#keys.inflight, ...callIds);
  }

  /** Renews the worker's heartbeat; `roles` (comma-separated) tells others what it does. */
  heartbeat(workerId: string, roles = ''): Promise<unknown> {
    return this.#redis.set(
      this.#keys.workerHeartbeat(workerId),
      roles || '-',
      'PX',
      this.#heartbeatTtlMs,
    );
  }

  /**
   * Finds calls whose worker is gone, hands them to `record` as LOST call events, and removes
   * them once recorded. Returns the calls this reaper removed: when reapers of several pools
   * find the same orphan, each records it (the call id makes that one record), but only the one
   * whose removal took it releases its budget and counts it against its task.
   */
  async reap(
    record: (events: StoreEvent[]) => Promise<void>,
    nowMs: number,
  ): Promise<InflightCall[]> {
    const all = await this.#redis.hgetall(this.#keys.inflight);
    const orphans: InflightCall[] = [];
    const alive = new Map<string, boolean>();
    for (const raw of Object.values(all)) {
      const call = JSON.parse(raw) as InflightCall;
      let live = alive.get(call.workerId);
      if (live === undefined) {
        live = (await this.#redis.exists(this.#keys.workerHeartbeat(call.workerId))) === 1;
        alive.set(call.workerId, live);
      }
      if (!live) orphans.push(call);
    }
    if (orphans.length === 0) return [];
    await record(orphans.map((c) => lostCallEvent(c, nowMs)));
    const removal = this.#redis.pipeline();
    for (const c of orphans) removal.hdel(this.#keys.inflight, c.callId);
    const removed = (await removal.exec()) ?? [];
    return orphans.filter((_, i) => {
      const [error, n] = removed[i] ?? [];
      return !error && n === 1;
    });
  }
}

/** How many live workers have `role` (from their heartbeats). */
export async function liveWorkersWithRole(
  redis: Redis,
  keys: HarvestKeys,
  role: string,
): Promise<number> {
  let cursor = '0';
  let found = 0;
  do {
    const [next, names] = await redis.scan(cursor, 'MATCH', keys.workerHeartbeats, 'COUNT', 100);
    cursor = next;
    const values = names.length > 0 ? await redis.mget(...names) : [];
    found += values.filter((v) => v?.split(',').includes(role)).length;
  } while (cursor !== '0');
  return found;
}

/** The record of a call whose worker stopped before its answer was recorded. */
export function lostCallEvent(c: InflightCall, nowMs: number, why?: string): StoreEvent {
  return {
    type: 'call',
    callId: c.callId,
    runId: c.runId,
    taskKey: c.taskKey,
    attempt: c.attempt,
    startedAt: c.startedAt,
    durationMs: Math.max(0, nowMs - c.startedAt),
    status: null,
    outcome: 'LOST',
    errorMessage: why ?? 'the worker stopped before the answer was recorded; the cost is unknown',
    creditsUsed: null,
    ...(c.purpose ? { purpose: c.purpose } : {}),
  };
}

/**
 * The calls of `runId` in flight now: journaled by workers whose heartbeat is live. A dead
 * worker's calls are not in flight but lost, and the next reap records them so.
 */
export async function liveCallsOfRun(
  redis: Redis,
  keys: HarvestKeys,
  runId: string,
): Promise<InflightCall[]> {
  const calls = (await redis.hvals(keys.inflight))
    .map((raw) => JSON.parse(raw) as InflightCall)
    .filter((c) => c.runId === runId);
  const workers = [...new Set(calls.map((c) => c.workerId))];
  if (workers.length === 0) return [];
  const beats = await redis.mget(...workers.map((w) => keys.workerHeartbeat(w)));
  const live = new Set(workers.filter((_, i) => beats[i] !== null));
  return calls.filter((c) => live.has(c.workerId));
}
