/**
 * Calls in flight, journaled in Redis. A call is written here before it is sent and removed
 * once its record is durable (in the store queue, or committed to SQLite). When a worker process dies (SIGKILL, power loss)
 * between the two, its heartbeat lapses and any live worker turns the orphaned entries into
 * calls recorded with outcome `LOST` and unknown cost: the service may have billed them, and
 * harvest says so instead of pretending they never happened.
 */
import type { Redis } from 'ioredis';
import type { StoreEvent } from '../store/events.ts';
import type { HarvestKeys } from './names.ts';

export interface InflightCall {
  callId: string;
  runId: string;
  taskKey: string;
  attempt: number;
  startedAt: number;
  workerId: string;
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

export class InflightJournal {
  readonly #redis: Redis;
  readonly #keys: HarvestKeys;
  readonly #heartbeatTtlMs: number;
  readonly #begins: TickBatch<InflightCall>;
  readonly #ends: TickBatch<string>;

  /** `heartbeatTtlMs`: a worker silent this long is dead and its calls are reaped. */
  constructor(redis: Redis, keys: HarvestKeys, heartbeatTtlMs = DEFAULT_HEARTBEAT_TTL_MS) {
    this.#redis = redis;
    this.#keys = keys;
    this.#heartbeatTtlMs = heartbeatTtlMs;
    this.#begins = new TickBatch((calls) =>
      redis.hset(keys.inflight, ...calls.flatMap((c) => [c.callId, JSON.stringify(c)])),
    );
    this.#ends = new TickBatch((callIds) => redis.hdel(keys.inflight, ...callIds));
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

  heartbeat(workerId: string): Promise<unknown> {
    return this.#redis.set(this.#keys.workerHeartbeat(workerId), '1', 'PX', this.#heartbeatTtlMs);
  }

  /**
   * Finds calls whose worker is gone, hands them to `record` as LOST call events, and removes
   * them once recorded. Returns how many were reaped.
   */
  async reap(record: (events: StoreEvent[]) => Promise<void>, nowMs: number): Promise<number> {
    const all = await this.#redis.hgetall(this.#keys.inflight);
    const orphans: InflightCall[] = [];
    for (const raw of Object.values(all)) {
      const call = JSON.parse(raw) as InflightCall;
      const alive = await this.#redis.exists(this.#keys.workerHeartbeat(call.workerId));
      if (!alive) orphans.push(call);
    }
    if (orphans.length === 0) return 0;
    await record(
      orphans.map((c) => ({
        type: 'call',
        callId: c.callId,
        runId: c.runId,
        taskKey: c.taskKey,
        attempt: c.attempt,
        startedAt: c.startedAt,
        durationMs: Math.max(0, nowMs - c.startedAt),
        status: null,
        outcome: 'LOST',
        errorMessage: 'the worker stopped before the answer was recorded; the cost is unknown',
        creditsUsed: null,
      })),
    );
    await this.#redis.hdel(this.#keys.inflight, ...orphans.map((c) => c.callId));
    return orphans.length;
  }
}
