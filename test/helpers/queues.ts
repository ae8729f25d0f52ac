/** Harvest queues in a known state under a fresh prefix, for tests that look at them. */
import { Queue, Worker } from 'bullmq';
import { createRedis } from '../../src/queue/connection.ts';
import { QUEUES } from '../../src/queue/names.ts';
import { REDIS_URL, testRedis } from './redis.ts';
import { waitFor } from './wait.ts';

/** The error of the failed job. */
export const FAILED_REASON = 'HTTP 400: query too long';

/**
 * A fresh prefix whose search queue holds one failed job (`run1.fails`, failed by a real
 * worker with `FAILED_REASON`) and one waiting job (`run1.waits`). `defer` undoes it all.
 */
export async function searchQueueWithJobs(
  defer: (undo: () => unknown) => void,
): Promise<{ prefix: string; search: Queue }> {
  const { prefix } = testRedis(defer);
  const connection = createRedis(REDIS_URL, 'worker');
  defer(() => connection.quit());
  const search = new Queue(QUEUES.search, { connection, prefix });
  defer(() => search.close());
  await search.add('search', { query: 'fails' }, { jobId: 'run1.fails', attempts: 1 });
  await new Promise<void>((resolve) => {
    const worker = new Worker(
      QUEUES.search,
      async () => {
        throw new Error(FAILED_REASON);
      },
      { connection, prefix },
    );
    worker.on('failed', () => void worker.close().then(resolve));
  });
  await search.add('search', { query: 'waits' }, { jobId: 'run1.waits' });
  return { prefix, search };
}

/** Jobs of `queue` not yet ended (waiting, prioritized, delayed or active). */
export async function unfinishedJobs(queue: Queue): Promise<number> {
  const counts = await queue.getJobCounts('waiting', 'prioritized', 'delayed', 'active');
  return Object.values(counts).reduce((sum, n) => sum + n, 0);
}

/** Waits until every job of `queue` has ended (none waiting, delayed or active). */
export async function waitForDrained(queue: Queue): Promise<void> {
  await waitFor(`the ${queue.name} queue to be drained`, () => unfinishedJobs(queue), {
    until: (n) => n === 0,
  });
}
