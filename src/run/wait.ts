/** Following a run to its end from SQLite (the store worker writes; this only reads). */
import { setTimeout as sleep } from 'node:timers/promises';
import { type CircuitState, OUTAGE_CODE, readCircuit } from '../queue/circuit.ts';
import { liveWorkersWithRole } from '../queue/inflight.ts';
import { type MediaPause, mediaPauseOf } from '../queue/media-pause.ts';
import type { MediaSummary } from '../store/index.ts';
import type { Runtime } from './runtime.ts';
import { pausedReason } from './runtime.ts';

export interface Progress {
  runId: string;
  status: string;
  total: number;
  done: number;
  failed: number;
  retrying: number;
  pending: number;
  creditsUsed: number;
  calls: number;
  /** Calls of unknown cost (no answer read, lost with a worker): not in `creditsUsed`. */
  unknownCostCalls: number;
  /** Tasks ended per second over the last few seconds; null until a second reading. */
  ratePerSec: number | null;
  /** Seconds until every task has ended at the current rate; null when unknown. */
  etaSec: number | null;
  elapsedMs: number;
  paused?: { code: string; reason: string };
  /** While the API is unreachable (src/queue/circuit.ts): the run waits for it, attempts unspent. */
  apiOutage?: CircuitState;
  /** Results new to the pipeline (URLs it saw first in this run); counted once the run has ended. */
  newUrls?: number;
  /** True once no live worker has had the search role for `noWorkerAfterMs`. */
  noWorker?: boolean;
  /** The run's media (saved of requested, pending, deadline due first); absent when it saves none. */
  media?: MediaSummary;
  /** Set while the run's media waits in a media queue paused for a full disk (`harvest media retry`). */
  mediaPaused?: MediaPause;
}

export interface WaitOptions {
  /** How often SQLite is read, in ms. Default 300. */
  pollMs?: number;
  onProgress?: (progress: Progress) => void;
  signal?: AbortSignal;
  /**
   * Say so (`noWorker`) when no live worker has the search role for this long, in ms, while
   * tasks are still waiting. Default: never checked.
   */
  noWorkerAfterMs?: number | undefined;
  /**
   * Also wait until no media of the run is pending (a pool with the media role runs here).
   * Default false: the run's end is its tasks' end, and media goes on in the workers.
   */
  waitForMedia?: boolean;
  /** When following the run began, ms since the epoch: `elapsedMs` counts from it. Default now. */
  since?: number;
}

const FINISHED = new Set(['completed', 'failed', 'cancelled', 'interrupted']);
/** How often live workers are counted, in ms. */
const WORKER_CHECK_MS = 2000;

/**
 * Resolves with the last progress when the run has finished, or is paused (401/402). An
 * unreachable API pauses the queue too, but the run goes on once it answers: that is waited for.
 */
export async function waitForRun(
  runtime: Runtime,
  runId: string,
  options: WaitOptions = {},
): Promise<Progress> {
  const startedAt = options.since ?? Date.now();
  const samples: { at: number; ended: number }[] = [];
  let lastWorkerSeen = startedAt;
  let lastWorkerCheck = 0;
  for (;;) {
    const progress = await readProgress(runtime, runId, startedAt, samples);
    if (options.noWorkerAfterMs !== undefined && Date.now() - lastWorkerCheck >= WORKER_CHECK_MS) {
      lastWorkerCheck = Date.now();
      const live = await liveWorkersWithRole(runtime.redis, runtime.keys, 'search').catch(() => 1);
      if (live > 0) lastWorkerSeen = lastWorkerCheck;
    }
    if (
      options.noWorkerAfterMs !== undefined &&
      progress.pending > 0 &&
      Date.now() - lastWorkerSeen >= options.noWorkerAfterMs
    ) {
      progress.noWorker = true;
    }
    options.onProgress?.(progress);
    const mediaPending = options.waitForMedia ? (progress.media?.pending ?? 0) : 0;
    if (FINISHED.has(progress.status) && mediaPending === 0) return progress;
    if (progress.paused || options.signal?.aborted) return progress;
    // Media held by a full disk waits for `harvest media retry`, not for this command.
    if (FINISHED.has(progress.status) && mediaPending > 0) {
      const mediaPaused = await mediaPauseOf(runtime.redis, runtime.keys).catch(() => undefined);
      if (mediaPaused) return { ...progress, mediaPaused };
    }
    await sleep(options.pollMs ?? 300);
  }
}

async function readProgress(
  runtime: Runtime,
  runId: string,
  startedAt: number,
  samples: { at: number; ended: number }[],
): Promise<Progress> {
  const { store } = runtime;
  const run = store.runs.get(runId);
  const counts = store.tasks.counts(runId);
  const calls = store.calls.totals(runId);
  const now = Date.now();
  const ended = counts.done + counts.failed;
  samples.push({ at: now, ended });
  while (samples.length > 2 && samples[0]!.at < now - 5000) samples.shift();
  const first = samples[0]!;
  // One reading says how many tasks have ended, not how fast: they may have ended before it.
  const ratePerSec = now > first.at ? ((ended - first.ended) * 1000) / (now - first.at) : null;
  const remaining = counts.total - ended;
  const paused = await pausedReason(runtime).catch(() => undefined);
  const status = run?.status ?? 'unknown';
  const apiOutage = FINISHED.has(status)
    ? undefined
    : await readCircuit(runtime.redis, runtime.keys).catch(() => undefined);
  const media = store.mediaSummary(runId);
  return {
    runId,
    status,
    total: counts.total,
    done: counts.done,
    failed: counts.failed,
    retrying: counts.retrying,
    pending: counts.queued + counts.running,
    creditsUsed: calls.creditsUsed,
    calls: calls.calls,
    unknownCostCalls: calls.unknownCostCalls,
    ratePerSec,
    etaSec: ratePerSec ? Math.round(remaining / ratePerSec) : null,
    elapsedMs: now - startedAt,
    // An outage's pause ends by itself once the API answers: it is `apiOutage`, not a stop.
    ...(paused && paused.code !== OUTAGE_CODE
      ? { paused: { code: paused.code, reason: paused.reason } }
      : {}),
    ...(apiOutage ? { apiOutage } : {}),
    ...(FINISHED.has(status) ? { newUrls: store.seenUrls.countFirstSeenIn(runId) } : {}),
    ...(media ? { media } : {}),
  };
}
