/**
 * This pool's heartbeat, and the reaper of calls lost with dead workers. Every call is
 * journaled before it is sent (src/queue/inflight.ts); a worker whose heartbeat has lapsed is
 * dead, and any live pool records its journaled calls as `LOST` (cost unknown), keeps their
 * budget reservations counted (the service may have billed them; src/queue/budget.ts `lose`),
 * and counts them against their task, so a task that keeps killing its
 * workers stops being called (see `maxLostCalls` in jobs/search/processor.ts).
 */
import type { Redis } from 'ioredis';
import type { StoreEvent } from '../src/events/store.ts';
import type { Logger } from '../src/log.ts';
import type { Budget } from '../src/queue/budget.ts';
import { type InflightCall, type InflightJournal, lostCallEvent } from '../src/queue/inflight.ts';
import { type HarvestKeys, searchJobId } from '../src/queue/names.ts';

export interface LostCallsOptions {
  workerId: string;
  /** The pool's roles, written into its heartbeat. */
  roles: readonly string[];
  inflight: InflightJournal;
  budget: Budget;
  redis: Redis;
  keys: HarvestKeys;
  record(events: StoreEvent[]): Promise<void>;
  /** Told of the lost calls this pool recorded and took off the journal (its metrics). */
  counted?: (events: StoreEvent[]) => void;
  log: Logger;
  /** How often to look for lost calls, in ms. Default min(5000, heartbeat TTL). */
  reapIntervalMs?: number;
}

export interface LostCallsWatch {
  /** Stops looking for other workers' lost calls (the heartbeat goes on). */
  stopReaping(): void;
  /** Stops the heartbeat and removes it: other pools may then reap this pool's calls. */
  stop(): Promise<void>;
  /**
   * Records this pool's own calls in flight as LOST, at once (a forced stop): the answers will
   * never be read, and the reaper of another pool would only say so later. Returns their ids.
   */
  abandonOwnCalls(why: string): Promise<string[]>;
}

export async function watchLostCalls(options: LostCallsOptions): Promise<LostCallsWatch> {
  const { inflight, workerId, log } = options;
  const roles = options.roles.join(',');
  await inflight.heartbeat(workerId, roles);
  const heartbeat = setInterval(
    () => void inflight.heartbeat(workerId, roles).catch(() => {}),
    Math.max(200, Math.floor(inflight.heartbeatTtlMs / 3)),
  );
  // One reap at a time: a reap slower than the interval (a slow record) is not started twice.
  let reaping = false;
  const reaper = setInterval(() => {
    if (reaping) return;
    reaping = true;
    void reapOnce()
      .then((n) => n > 0 && log.warn({ lost: n }, 'recorded calls lost with a dead worker'))
      .catch((error: unknown) => log.warn({ err: error }, 'reaping lost calls failed'))
      .finally(() => {
        reaping = false;
      });
  }, options.reapIntervalMs ?? Math.min(5000, inflight.heartbeatTtlMs));

  async function settleLost(calls: readonly InflightCall[]): Promise<void> {
    for (const c of calls) {
      await options.budget.lose(c.runId, c.callId);
      if (!c.purpose || c.purpose === 'search') {
        await options.redis.hincrby(options.keys.crashes, searchJobId(c.runId, c.taskKey), 1);
      }
    }
  }

  async function reapOnce(): Promise<number> {
    const nowMs = Date.now();
    const reaped = await inflight.reap(options.record, nowMs);
    options.counted?.(reaped.map((c) => lostCallEvent(c, nowMs)));
    await settleLost(reaped);
    return reaped.length;
  }

  return {
    stopReaping: () => clearInterval(reaper),
    async stop() {
      clearInterval(reaper);
      clearInterval(heartbeat);
      await options.redis.del(options.keys.workerHeartbeat(workerId)).catch(() => {});
    },
    async abandonOwnCalls(why) {
      const calls = await inflight.ofWorker(workerId);
      if (calls.length === 0) return [];
      log.debug({ calls: calls.length }, 'recording the calls in flight as lost');
      const nowMs = Date.now();
      const events = calls.map((c) => lostCallEvent(c, nowMs, why));
      await options.record(events);
      options.counted?.(events);
      await inflight.forget(calls.map((c) => c.callId));
      // Not counted against their tasks: the worker did not crash, it was told to stop.
      for (const c of calls) await options.budget.lose(c.runId, c.callId);
      return calls.map((c) => c.callId);
    },
  };
}

/** How many calls of a search job were lost with dead workers. */
export async function lostCallsOf(redis: Redis, keys: HarvestKeys, jobId: string): Promise<number> {
  return Number((await redis.hget(keys.crashes, jobId)) ?? 0);
}

/**
 * Which calls a forced stop recorded as LOST were answered after all. The pool's processors go
 * on until the process ends: an answer that arrives meanwhile is recorded, and its record
 * replaces the LOST one (src/store/calls.ts), so that call is not lost. Only records made
 * durable once `watch` was called are noted.
 */
export class LateAnswers {
  #watching = false;
  readonly #answered = new Set<string>();

  /** `record`, noting the answered calls whose records it made durable. */
  noting(record: (events: StoreEvent[]) => Promise<void>): (events: StoreEvent[]) => Promise<void> {
    return (events) => record(events).then(() => this.#note(events));
  }

  /** Starts noting (a forced stop begins). */
  watch(): void {
    this.#watching = true;
  }

  /** How many of `callIds` no answer's record has replaced. */
  stillLost(callIds: readonly string[]): number {
    return callIds.filter((id) => !this.#answered.has(id)).length;
  }

  #note(events: readonly StoreEvent[]): void {
    if (!this.#watching) return;
    for (const e of events) {
      if (e.type === 'call' && e.outcome !== 'LOST') this.#answered.add(e.callId);
    }
  }
}
