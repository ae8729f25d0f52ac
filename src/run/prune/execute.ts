/**
 * Carries out a prune plan next to a running pool: each run's calls, results and media rows
 * leave in batches of tasks, one short immediate transaction each (sized so a batch holds the
 * write lock about `batchTargetMs`), then the media files no kept row points at, then free
 * pages go back to the file system in small incremental-vacuum steps. The event loop is let go
 * between two steps, so a pool in the same process (the runs role) goes on meanwhile.
 *
 * A run that is resumed, or saves media again, before its turn is left as it is (`stopped`).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Store } from '../../store/index.ts';
import type { PrunePlan } from './plan.ts';

export interface PruneOptions {
  /** The data directory: media rows' paths are relative to it. */
  dataDir: string;
  /** Tasks in the first batch; later batches are sized from the time each took. Default 100. */
  batchTasks?: number;
  /** Time a batch should hold the write lock, in ms. Default 200. */
  batchTargetMs?: number;
  /** Pages given back per incremental-vacuum step. Default 512 (2 MiB at 4 KiB pages). */
  vacuumPages?: number;
  /** Media files checked and removed per transaction. Default 200. */
  filesPerStep?: number;
}

export interface PruneOutcome {
  /** Runs whose rows were all removed. */
  pruned: string[];
  /** Runs left alone after all, with why. */
  stopped: { runId: string; reason: string }[];
  calls: number;
  results: number;
  media: number;
  files: number;
  fileBytes: number;
  /** Files already missing from disk. */
  missingFiles: number;
  /** Stored contents no kept result references any more, and their bytes. */
  contents: number;
  contentBytes: number;
  /** The longest any one step (a batch, a file step, a vacuum step) held the write lock, in ms. */
  longestStepMs: number;
  database: DatabaseSpace;
}

export interface DatabaseSpace {
  /** Whether the file gives free pages back (auto_vacuum = INCREMENTAL). */
  incremental: boolean;
  /** Pages freed by the removal. */
  freedPages: number;
  pageSize: number;
  /** Pages given back to the file system. */
  vacuumedPages: number;
  fileBytesBefore: number;
  fileBytesAfter: number;
}

const yieldLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Runs one step, keeping the longest a step took. */
function timed<T>(outcome: { longestStepMs: number }, step: () => T): T {
  const started = performance.now();
  try {
    return step();
  } finally {
    outcome.longestStepMs = Math.max(outcome.longestStepMs, performance.now() - started);
  }
}

function fileBytes(file: string): number {
  try {
    return fs.statSync(file).size;
  } catch {
    return 0;
  }
}

export async function executePrune(
  store: Store,
  plan: PrunePlan,
  options: PruneOptions,
): Promise<PruneOutcome> {
  // What earlier commits left in the WAL goes into the file first: its size is then the truth.
  store.prune.checkpoint();
  const before = store.prune.pages();
  const fileBytesBefore = fileBytes(store.path);
  const outcome: PruneOutcome = {
    pruned: [],
    stopped: [],
    calls: 0,
    results: 0,
    media: 0,
    files: 0,
    fileBytes: 0,
    missingFiles: 0,
    contents: 0,
    contentBytes: 0,
    longestStepMs: 0,
    database: {
      incremental: before.autoVacuum === 2,
      freedPages: 0,
      pageSize: before.pageSize,
      vacuumedPages: 0,
      fileBytesBefore,
      fileBytesAfter: fileBytesBefore,
    },
  };
  for (const run of plan.runs) await pruneRun(store, run.runId, options, outcome);
  if (outcome.pruned.length > 0) {
    const content = store.prune.deleteUnreferencedContent((batch) => timed(outcome, batch));
    outcome.contents = content.rows;
    outcome.contentBytes = content.bytes;
  }
  await removeFiles(store, plan, options, outcome);
  const freed = store.prune.pages().freePages;
  outcome.database.freedPages = Math.max(0, freed - before.freePages);
  if (outcome.database.incremental) {
    outcome.database.vacuumedPages = await vacuumInSteps(
      store,
      options.vacuumPages ?? 512,
      outcome,
    );
  }
  store.prune.checkpoint();
  outcome.database.fileBytesAfter = fileBytes(store.path);
  return outcome;
}

async function pruneRun(
  store: Store,
  runId: string,
  options: PruneOptions,
  outcome: PruneOutcome,
): Promise<void> {
  const targetMs = options.batchTargetMs ?? 200;
  let tasks = options.batchTasks ?? 100;
  let after: string | null = null;
  for (;;) {
    const started = performance.now();
    const moved = timed(outcome, () => store.prune.moveBatch(runId, after, tasks));
    const tookMs = performance.now() - started;
    if (moved === undefined) {
      outcome.stopped.push({ runId, reason: 'resumed, or saving media, while it was pruned' });
      return;
    }
    outcome.calls += moved.calls;
    outcome.results += moved.results;
    outcome.media += moved.media;
    if (moved.done) break;
    after = moved.lastKey;
    // Twice as many tasks at most, a tenth at least: the next batch takes about targetMs.
    const scale = Math.min(2, Math.max(0.1, targetMs / Math.max(1, tookMs)));
    tasks = Math.max(1, Math.min(10_000, Math.round(tasks * scale)));
    await yieldLoop();
  }
  outcome.pruned.push(runId);
}

/**
 * Removes the plan's media files that no media row points at now. The check and the removal
 * are one immediate transaction, so no row pointing at a file is committed in between.
 */
async function removeFiles(
  store: Store,
  plan: PrunePlan,
  options: PruneOptions,
  outcome: PruneOutcome,
): Promise<void> {
  const step = options.filesPerStep ?? 200;
  for (let i = 0; i < plan.files.length; i += step) {
    const chunk = plan.files.slice(i, i + step);
    timed(outcome, () =>
      store.prune.exclusive(() => {
        const referenced = store.prune.referencedPaths(
          chunk.map((f) => f.path),
          [],
        );
        for (const file of chunk) {
          if (referenced.has(file.path)) continue;
          const full = path.resolve(options.dataDir, file.path);
          const bytes = fileBytes(full);
          try {
            fs.unlinkSync(full);
            outcome.files++;
            outcome.fileBytes += bytes;
          } catch (error) {
            if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
            outcome.missingFiles++;
          }
        }
      }),
    );
    await yieldLoop();
  }
}

/** Gives free pages back in steps of `pages`, each its own short transaction. */
async function vacuumInSteps(
  store: Store,
  pages: number,
  outcome: { longestStepMs: number },
): Promise<number> {
  let given = 0;
  for (;;) {
    const free = store.prune.pages().freePages;
    if (free === 0) return given;
    timed(outcome, () => store.prune.incrementalVacuum(Math.min(pages, free)));
    const left = store.prune.pages().freePages;
    if (left >= free) return given;
    given += free - left;
    await yieldLoop();
  }
}
