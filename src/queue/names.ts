/**
 * Queue names, Redis key prefixes and job ids, in one small pure module.
 *
 * Every BullMQ key lives under `<prefix>:<queue>:...`; harvest's own keys (budgets, the
 * rate controller, in-flight calls, worker heartbeats) under `<prefix>:h:...`, so one prefix
 * owns everything a deployment (or a test) writes to Redis.
 */

export const QUEUES = {
  /** One job per planned task: call the API, hand the outcome to `store`. */
  search: 'search',
  /** Batches of call/result/task events, applied to SQLite by the single writer. */
  store: 'store',
} as const;

export type QueueName = (typeof QUEUES)[keyof typeof QUEUES];

/** BullMQ refuses `:` in custom job ids, so run id and task key are joined with `.`. */
export function searchJobId(runId: string, taskKey: string): string {
  return `${runId}.${taskKey}`;
}

/** The run and task a search job id names; undefined for ids harvest did not make. */
export function parseSearchJobId(id: string): { runId: string; taskKey: string } | undefined {
  const dot = id.indexOf('.');
  if (dot <= 0 || dot === id.length - 1) return undefined;
  return { runId: id.slice(0, dot), taskKey: id.slice(dot + 1) };
}

export interface HarvestKeys {
  /** Hash: run id -> credits spent or reserved by in-flight calls. */
  readonly budget: string;
  /** Hash: call id -> JSON of a call that has been sent and not yet recorded. */
  readonly inflight: string;
  /** String with TTL, one per live worker process. */
  workerHeartbeat(workerId: string): string;
  /** Hash: the shared rate controller's state. */
  readonly rate: string;
  /** String: why the search queue is paused (401/402), for `harvest status`. */
  readonly pausedReason: string;
  /** Pattern matching every key harvest owns under this prefix (for cleanup in tests). */
  readonly pattern: string;
}

export function harvestKeys(prefix: string): HarvestKeys {
  const base = `${prefix}:h`;
  return {
    budget: `${base}:budget`,
    inflight: `${base}:inflight`,
    workerHeartbeat: (workerId) => `${base}:worker:${workerId}`,
    rate: `${base}:rate`,
    pausedReason: `${base}:paused-reason`,
    pattern: `${prefix}:*`,
  };
}

/** A run id: sortable by time, readable, safe in job ids, file names and Redis keys. */
export function newRunId(nowMs: number, random: () => number = Math.random): string {
  const stamp = new Date(nowMs).toISOString().replace(/[-:]/g, '').replace(/\..*$/, '');
  const suffix = Math.floor(random() * 36 ** 4)
    .toString(36)
    .padStart(4, '0');
  return `${stamp}-${suffix}`;
}
