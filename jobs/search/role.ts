/**
 * The `search` role: BullMQ workers on the search queue running jobs/search/processor.ts, on any
 * host that reaches Redis and the API, wired to the pieces the pool shares.
 */
import { type Queue, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { DEFAULT_PROBE_BASE_MS, DEFAULT_PROBE_MAX_MS } from '../../src/api/outage.ts';
import { ApiCircuit, OUTAGE_CODE } from '../../src/queue/circuit.ts';
import { type HarvestKeys, QUEUES } from '../../src/queue/names.ts';
import { pauseQueue } from '../../src/queue/pause.ts';
import { backoffStrategy } from '../../src/queue/retry.ts';
import { lostCallsOf } from '../lost-calls.ts';
import type { RoleContext, RoleHandle } from '../role.ts';
import { OutageWatch, pauseForOutage } from './outage.ts';
import { createSearchProcessor, recordUnexpectedFailure, type SearchDeps } from './processor.ts';

export interface SearchRoleOptions {
  /** Search jobs in flight at once in this process. Default 16. */
  concurrency?: number;
  /** How long a job's lock lives without renewal, in ms. Default 30000. */
  lockDurationMs?: number;
  /** How often stalled jobs are looked for, in ms. Default 15000. */
  stalledIntervalMs?: number;
  /** Times a search job may come back after its worker died before it fails. Default 100. */
  maxStalledCount?: number;
  /** Calls of one task lost with dead workers before it fails as WORKER_CRASHED. Default 3. */
  maxLostCalls?: number;
  /**
   * Longest wait between two probes of an unreachable API, in ms (HARVEST_API_PROBE_MAX_MS).
   * Default 180000.
   */
  apiProbeMaxMs?: number;
  /** HARVEST_CREDITS_ANOMALY_FACTOR (src/events/call.ts `okCallEvent`). Default 10. */
  creditsAnomalyFactor?: number;
}

/** Search slots per BullMQ worker (see startSearchRole). */
export const SLOTS_PER_WORKER = 16;

/** Splits `concurrency` into near-equal slices of at most `max`: 40, 16 -> [14, 13, 13]. */
export function splitConcurrency(concurrency: number, max: number): number[] {
  const total = Math.max(1, Math.floor(concurrency));
  const parts = Math.ceil(total / max);
  const base = Math.floor(total / parts);
  return Array.from({ length: parts }, (_, i) => base + (i < total % parts ? 1 : 0));
}

/** Pauses the search queue for a reason a human can act on, visible to `harvest status`. */
export function pauseSearchQueue(
  queue: Queue,
  redis: Redis,
  keys: HarvestKeys,
  code: string,
  reason: string,
): Promise<void> {
  return pauseQueue(queue, redis, keys.pausedReason, { code, reason }, 'latest');
}

export async function startSearchRole(
  ctx: RoleContext,
  options: SearchRoleOptions = {},
): Promise<RoleHandle> {
  const { client, log } = ctx;
  if (!client) throw new Error('the search role needs an API client');
  const outage = outageWatch(ctx, client, options);
  const deps: SearchDeps = {
    client,
    record: ctx.record,
    budget: ctx.budget,
    inflight: ctx.inflight,
    keys: ctx.keys,
    rate: ctx.rate,
    pause: (code, reason) =>
      code === OUTAGE_CODE
        ? pauseForOutage(ctx.searchQueue, ctx.redis, ctx.keys, reason)
        : pauseSearchQueue(ctx.searchQueue, ctx.redis, ctx.keys, code, reason),
    circuit: outage,
    lostCalls: (jobId) => lostCallsOf(ctx.redis, ctx.keys, jobId),
    ...(ctx.store
      ? { taskDone: (runId, key) => ctx.store?.tasks.get(runId, key)?.status === 'done' }
      : {}),
    maxLostCalls: options.maxLostCalls ?? 3,
    stopReason: (runId) => ctx.stoppedRuns.confirmedReason(runId),
    workerId: ctx.workerId,
    logger: log,
    ...(options.creditsAnomalyFactor === undefined
      ? {}
      : { creditsAnomalyFactor: options.creditsAnomalyFactor }),
  };
  const processor = createSearchProcessor(deps);
  // Several BullMQ workers share the concurrency: a BullMQ worker fetches jobs one round trip
  // at a time until all its slots are full and only then starts them, so one worker with many
  // slots sits idle whenever Redis is busy (while a run is enqueued, say). Slices of
  // SLOTS_PER_WORKER start work after a few round trips.
  const workers = splitConcurrency(options.concurrency ?? 16, SLOTS_PER_WORKER).map((slots) => {
    const worker = new Worker(QUEUES.search, processor, {
      connection: ctx.connection,
      prefix: ctx.prefix,
      concurrency: slots,
      lockDuration: options.lockDurationMs ?? 30_000,
      stalledInterval: options.stalledIntervalMs ?? 15_000,
      // A worker killed mid-call is not the job's fault: let it come back many times (a task
      // whose calls keep dying with their workers is stopped by maxLostCalls instead).
      maxStalledCount: options.maxStalledCount ?? 100,
      settings: { backoffStrategy },
    });
    worker.on('failed', (job, error) => void recordUnexpectedFailure(deps, job, error));
    worker.on('error', (error) => log.error({ err: error }, 'search worker error'));
    return worker;
  });
  // Urgent media in this process comes first, and the key's rate limit holds its calls: no new
  // search starts meanwhile.
  const stopGate = ctx.searchGate.onChange((held) => {
    for (const w of workers) {
      const change = held ? w.pause(true) : w.resume();
      change.catch((error: unknown) => log.warn({ err: error }, 'could not pause or resume'));
    }
    const why = ctx.searchGate.reason;
    log.debug({ held }, held ? `searches wait for ${why ?? 'a hold'}` : 'searches go on');
  });
  outage.start(Math.min(1000, options.apiProbeMaxMs ?? DEFAULT_PROBE_MAX_MS));
  return {
    close: async () => {
      stopGate();
      await outage.stop();
      await Promise.all(workers.map((w) => w.close()));
    },
  };
}

/** The pool's judge of failed calls and prober of an unreachable API (./outage.ts). */
function outageWatch(
  ctx: RoleContext,
  client: NonNullable<RoleContext['client']>,
  options: SearchRoleOptions,
): OutageWatch {
  const maxMs = options.apiProbeMaxMs ?? DEFAULT_PROBE_MAX_MS;
  return new OutageWatch({
    circuit: new ApiCircuit(ctx.redis, ctx.keys),
    client,
    searchQueue: ctx.searchQueue,
    redis: ctx.redis,
    keys: ctx.keys,
    workerId: ctx.workerId,
    log: ctx.log,
    probe: { baseMs: Math.min(DEFAULT_PROBE_BASE_MS, maxMs), maxMs },
  });
}
