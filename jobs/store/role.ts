/**
 * The `store` role: the worker of the store queue, on the host that owns the database. Its
 * processor (./processor.ts) hands the events of search workers in other processes to the
 * database's one writer, then finishes what those workers may not have (./finish.ts). Store
 * jobs that used up their attempts are kept in the failed set, never deleted (each may be the
 * only record of billed calls), and are sent back to the queue whenever a store role starts.
 *
 * It also runs the feeder (src/run/feed/feeder.ts), which tops the search queue up from SQLite for
 * runs larger than the queue window; of all the store roles, the one holding its lease feeds.
 */
import { Worker } from 'bullmq';
import { QUEUES } from '../../src/queue/names.ts';
import { backoffStrategy } from '../../src/queue/retry.ts';
import { redriveFailedStoreJobs } from '../../src/queue/store-queue.ts';
import { Feeder, type FeederOptions } from '../../src/run/feed/feeder.ts';
import type { RoleContext, RoleHandle } from '../role.ts';
import { finishCommitted } from './finish.ts';
import { createStoreProcessor, STORE_BATCH_JOBS } from './processor.ts';

export async function startStoreRole(
  ctx: RoleContext,
  feeding: FeederOptions | undefined,
): Promise<RoleHandle> {
  const { writer, store, log } = ctx;
  if (!writer || !store) throw new Error('the store role needs the database');
  const redriven = await redriveFailedStoreJobs(ctx.storeQueue);
  if (redriven > 0) log.warn({ jobs: redriven }, 'store jobs that had failed for good are retried');
  const processor = createStoreProcessor(writer, log, {
    hasRun: (runId) => store.runs.get(runId) !== undefined,
    dbPath: store.path,
    committed: finishCommitted(ctx, store),
  });
  const worker = new Worker(QUEUES.store, processor, {
    connection: ctx.connection,
    prefix: ctx.prefix,
    // Jobs in hand at once; those that arrive together share one transaction.
    concurrency: STORE_BATCH_JOBS,
    maxStalledCount: 100,
    settings: { backoffStrategy },
  });
  worker.on('error', (error) => log.error({ err: error }, 'store worker error'));
  worker.on('failed', (job, error) => {
    const last = job !== undefined && job.attemptsMade >= (job.opts.attempts ?? 1);
    log.error(
      { err: error, jobId: job?.id, attemptsMade: job?.attemptsMade },
      last
        ? 'store job failed for good: its events are kept in the store queue and retried when a store worker starts or a run resumes'
        : 'store job failed; it will be retried',
    );
  });
  const feeder = feeding
    ? new Feeder(
        {
          store,
          queue: ctx.searchQueue,
          redis: ctx.redis,
          keys: ctx.keys,
          owner: ctx.workerId,
          log,
        },
        feeding,
      )
    : undefined;
  feeder?.start();
  return {
    async close() {
      await feeder?.stop();
      await worker.close();
    },
  };
}
