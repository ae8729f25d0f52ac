/**
 * The `store` queue's processor: commits each store job's events (those of many search jobs on
 * another host) through the database's one writer, and completes the job only once they are
 * committed. The writer's group commit (src/store/writer/commit.ts) puts the store jobs in hand
 * at once in one transaction, which also finishes the runs whose last tasks it ends
 * (src/store/apply-events.ts). The writes are idempotent, so a redelivered job never doubles a
 * row.
 *
 * Once committed, and before the jobs complete, `committed` finishes what the search workers may
 * not have (the store role's: ./finish.ts), once for all the jobs of a transaction.
 */
import type { Job } from 'bullmq';
import type { Logger } from '../../src/log.ts';
import { foreignRunWarner } from '../../src/store/foreign-runs.ts';
import type { EventWriter, WriteOptions } from '../../src/store/index.ts';

/** Store jobs in hand at once (the store worker's concurrency). */
export const STORE_BATCH_JOBS = 16;
/**
 * Longest a store job waits for companions before its transaction, in ms, when none runs.
 * Search jobs do not wait for this (only for their events to be in the store queue), so it
 * costs progress updates a few ms and saves commits.
 */
export const STORE_BATCH_WINDOW_MS = 5;

export interface StoreProcessorOptions {
  /**
   * Jobs in hand at once; once that many wait for their transaction, it starts without waiting
   * out the window (nothing more can arrive). Default STORE_BATCH_JOBS.
   */
  batchJobs?: number;
  /** Default STORE_BATCH_WINDOW_MS. */
  windowMs?: number;
  /**
   * Whether this database has the run. Events of a run it lacks are kept all the same, and
   * said once per run: the run was started against another database (`harvest run` and the
   * worker with different HARVEST_DB or HARVEST_DATA_DIR on one queue prefix).
   */
  hasRun?: (runId: string) => boolean;
  /** The database, to name in that warning. */
  dbPath?: string;
  /**
   * Called with the events of the jobs committed together, once they are, before those jobs
   * complete (./finish.ts). Its failure is logged, not the jobs'.
   */
  committed?: (events: readonly unknown[]) => Promise<void>;
}

export function createStoreProcessor(
  writer: EventWriter,
  logger: Logger,
  options: StoreProcessorOptions = {},
) {
  const together: WriteOptions = {
    waitMs: options.windowMs ?? STORE_BATCH_WINDOW_MS,
    enoughWrites: options.batchJobs ?? STORE_BATCH_JOBS,
  };
  const warnOfForeignRuns = options.hasRun
    ? foreignRunWarner(options.hasRun, options.dbPath, logger)
    : () => {};
  const { committed } = options;
  const finish = committed ? oncePerTurn(committed, logger) : async () => {};

  return async function processStore(job: Job): Promise<{ applied: number }> {
    // applyEvents validates each event itself; only the envelope is checked here.
    const { events } = job.data as { events?: unknown };
    if (!Array.isArray(events)) throw new Error(`store job ${job.id} carries no events`);
    warnOfForeignRuns(events);
    const rejected = await writer.write(events, together);
    await finish(events);
    if (rejected.length > 0) {
      // Kept out of SQLite but never silent: the job's log line names every rejected event.
      logger.error({ jobId: job.id, rejected }, 'store events rejected');
    }
    return { applied: events.length - rejected.length };
  };
}

/**
 * `committed`, called once for the events handed to it in one turn of the event loop. The
 * writer answers every write of a transaction in one turn, so the jobs of a transaction are
 * finished with one call (one round of Redis commands), not one each.
 */
function oncePerTurn(
  committed: (events: readonly unknown[]) => Promise<void>,
  logger: Logger,
): (events: readonly unknown[]) => Promise<void> {
  let batches: (readonly unknown[])[] = [];
  let done: Promise<void> | undefined;
  return (events) => {
    batches.push(events);
    done ??= new Promise<void>((resolve) => {
      setImmediate(() => {
        const taken = batches;
        batches = [];
        done = undefined;
        Promise.resolve(taken.length === 1 ? (taken[0] ?? []) : taken.flat())
          .then(committed)
          .catch((error: unknown) =>
            logger.warn(
              { err: error },
              'could not finish after a commit (job marks, budget settles)',
            ),
          )
          .finally(resolve);
      });
    });
    return done;
  };
}
