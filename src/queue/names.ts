/**
 * Queue names, Redis key prefixes and job ids, in one small pure module.
 *
 * Every BullMQ key lives under `<prefix>:<queue>:...`; harvest's own keys (budgets, the
 * rate controller, in-flight calls, worker heartbeats) under `<prefix>:h:...`, so one prefix
 * owns everything a deployment (or a test) writes to Redis.
 */
import { createHash } from 'node:crypto';

export const QUEUES = {
  /** One job per planned task: call the API, hand the outcome to `store`. */
  search: 'search',
  /** Batches of call/result/task events, applied to SQLite by the single writer. */
  store: 'store',
  /**
   * On the database host: `tick` jobs from the job schedulers of `harvest schedule apply` start
   * scheduled runs; `notify` jobs deliver a finished scheduled run's webhook.
   */
  runs: 'runs',
  /** One job per media row: download a signed URL before it expires, on the database host. */
  media: 'media',
} as const;

export type QueueName = (typeof QUEUES)[keyof typeof QUEUES];

/** Job names on the `runs` queue. */
export const RUNS_JOBS = { tick: 'tick', notify: 'notify' } as const;

/** The job id of a run's webhook delivery: one per run, so enqueuing it again is harmless. */
export function notifyJobId(runId: string): string {
  return `notify-${runId}`;
}

/** A missed tick that `schedule apply` queued again: one job per pipeline and due time. */
export function missedTickJobId(pipelineName: string, dueAt: number): string {
  return `missed-tick-${pipelineName}-${dueAt}`;
}

/** BullMQ refuses `:` in custom job ids, so run id and task key are joined with `.`. */
export function searchJobId(runId: string, taskKey: string): string {
  return `${runId}.${taskKey}`;
}

/**
 * The job id of a media job: `media-<its first row id>-<digest of its rows and their versions>`
 * (BullMQ refuses integer-like custom ids). The same rows queued again as they were (a restart,
 * a process that died before marking them queued) get the same id, so no job is doubled while
 * the first is still in Redis. Any other group gets another id: BullMQ ignores a job whose id a
 * job still in Redis holds, and a row of the new group (one made pending again by a newer
 * answer, one grouped otherwise after a restart) would be marked queued with no job.
 */
export function mediaJobId(rows: ReadonlyArray<{ id: number; updatedAt: number }>): string {
  const digest = createHash('sha256');
  for (const row of rows) digest.update(`${row.id}:${row.updatedAt},`);
  return `media-${rows[0]?.id ?? 0}-${digest.digest('hex').slice(0, 16)}`;
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
  /** Hash: `runId|callId` -> credits reserved by that call while it is in flight. */
  readonly reservations: string;
  /** Hash: search job id -> calls of the task lost with a worker that died during them. */
  readonly crashes: string;
  /** Hash: run id -> why its user stopped it (`cancelled`, `interrupted`); see stopped-runs.ts. */
  readonly stoppedRuns: string;
  /** Hash: call id -> JSON of a call that has been sent and not yet recorded. */
  readonly inflight: string;
  /** String with TTL, one per live worker process; its value lists the pool's roles. */
  workerHeartbeat(workerId: string): string;
  /** Pattern matching every worker heartbeat. */
  readonly workerHeartbeats: string;
  /**
   * The rate limit of pools whose API key is unknown (no search role, tests): see `rateOf`.
   * Hash: what the shared rate controller knows of the service's limit (src/queue/rate/model.ts).
   */
  readonly rate: string;
  /** Sorted set: the calls counted against `rate`, by when they went (src/queue/rate/scripts.ts). */
  readonly rateLog: string;
  /**
   * The rate limit of one API key, named by its id (`apiKeyId`, a hash: the key itself is never
   * in Redis): the service limits each team, so what a 429 teaches holds for its key alone.
   */
  rateOf(keyId: string): { rate: string; rateLog: string };
  /** Pattern matching every key's rate model (`rateOf(...).rate`). */
  readonly rateModels: string;
  /** Sorted set: a run's calls paced by its `run.rateLimitPerMinute`, by when they went. */
  runRateLog(runId: string): string;
  /** String with TTL: `<until ms> <limit>` while a run's own limit is spent (for `status`). */
  runRateHold(runId: string): string;
  /** Pattern matching every `runRateHold`. */
  readonly runRateHolds: string;
  /** String: why the search queue is paused (401/402), for `harvest status`. */
  readonly pausedReason: string;
  /**
   * Hash: the API circuit (src/queue/circuit.ts): when calls were last answered, and while the
   * API is unreachable, since when, the last error and the next probe.
   */
  readonly apiCircuit: string;
  /** Sorted set: the 5xx and timeouts since the last healthy answer, by when they failed. */
  readonly apiFailures: string;
  /** String with TTL: the pool whose turn it is to probe the unreachable API. */
  readonly apiProbeLease: string;
  /** String: why the media queue is paused (a full disk), for `harvest status` (src/queue/media-pause.ts). */
  readonly mediaPausedReason: string;
  /** String: the instant media job priorities count from, ms since the epoch (src/media/priority.ts). */
  readonly mediaPriorityAnchor: string;
  /**
   * Hash: run id -> JSON of a run being fed from SQLite (its cursor, attempts, budget); see
   * src/run/feed/state.ts. Only runs larger than the queue window have an entry.
   */
  readonly feed: string;
  /** String with TTL: the id of the one process feeding runs (src/run/feed/feeder.ts). */
  readonly feederLease: string;
  /**
   * String with TTL: the id of a feeder that asks for the lease before others (`run --wait`);
   * the holder lets go of it between two rounds.
   */
  readonly feederWant: string;
  /**
   * Set with TTL, per fed run: task keys whose jobs were in Redis when the run was resumed,
   * which its feeder does not add again (src/run/enqueue-run.ts).
   */
  feedLive(runId: string): string;
  /** Pattern matching every key harvest owns under this prefix (for cleanup in tests). */
  readonly pattern: string;
}

export function harvestKeys(prefix: string): HarvestKeys {
  const base = `${prefix}:h`;
  return {
    budget: `${base}:budget`,
    reservations: `${base}:reservations`,
    crashes: `${base}:crashes`,
    stoppedRuns: `${base}:stopped-runs`,
    inflight: `${base}:inflight`,
    workerHeartbeat: (workerId) => `${base}:worker:${workerId}`,
    workerHeartbeats: `${base}:worker:*`,
    rate: `${base}:rate`,
    rateLog: `${base}:rate-log`,
    rateOf: (keyId) => ({ rate: `${base}:rate:${keyId}`, rateLog: `${base}:rate-log:${keyId}` }),
    rateModels: `${base}:rate:*`,
    runRateLog: (runId) => `${base}:run-rate-log:${runId}`,
    runRateHold: (runId) => `${base}:run-rate-hold:${runId}`,
    runRateHolds: `${base}:run-rate-hold:*`,
    pausedReason: `${base}:paused-reason`,
    apiCircuit: `${base}:api-circuit`,
    apiFailures: `${base}:api-failures`,
    apiProbeLease: `${base}:api-probe-lease`,
    mediaPausedReason: `${base}:media-paused-reason`,
    mediaPriorityAnchor: `${base}:media-priority-anchor`,
    feed: `${base}:feed`,
    feederLease: `${base}:feeder-lease`,
    feederWant: `${base}:feeder-want`,
    feedLive: (runId) => `${base}:feed-live:${runId}`,
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
