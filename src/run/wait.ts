/** Following a run to its end from SQLite (the store worker writes; this only reads). */
import { setTimeout as sleep } from 'node:timers/promises';
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
  /** Tasks ended per second over the last few seconds; null until a second reading. */
  ratePerSec: number | null;
  /** Seconds until every task has ended at the current rate; null when unknown. */
  etaSec: number | null;
  elapsedMs: number;
  paused?: { code: string; reason: string };
}

export interface WaitOptions {
  /** How often SQLite is read, in ms. Default 300. */
  pollMs?: number;
  onProgress?: (progress: Progress) => void;
  signal?: AbortSignal;
}

const FINISHED = new Set(['completed', 'failed', 'cancelled']);

/** Resolves with the last progress when the run has finished, or is paused (401/402). */
export async function waitForRun(
  runtime: Runtime,
  runId: string,
  options: WaitOptions = {},
): Promise<Progress> {
  const startedAt = Date.now();
  const samples: { at: number; ended: number }[] = [];
  for (;;) {
    const progress = await readProgress(runtime, runId, startedAt, samples);
    options.onProgress?.(progress);
    if (FINISHED.has(progress.status) || progress.paused || options.signal?.aborted)
      return progress;
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
  return {
    runId,
    status: run?.status ?? 'unknown',
    total: counts.total,
    done: counts.done,
    failed: counts.failed,
    retrying: counts.retrying,
    pending: counts.queued + counts.running,
    creditsUsed: calls.creditsUsed,
    calls: calls.calls,
    ratePerSec,
    etaSec: ratePerSec ? Math.round(remaining / ratePerSec) : null,
    elapsedMs: now - startedAt,
    ...(paused ? { paused: { code: paused.code, reason: paused.reason } } : {}),
  };
}
