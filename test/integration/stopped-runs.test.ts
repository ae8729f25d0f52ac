/** Removing a stopped run's queued jobs counts only the jobs it really took out of the queue. */
import { Queue, Worker } from 'bullmq';
import { afterEach, describe, expect, it } from 'vitest';
import { createRedis } from '../../src/queue/connection.ts';
import { QUEUES, searchJobId } from '../../src/queue/names.ts';
import { removeQueuedJobs } from '../../src/queue/stopped-runs.ts';
import { REDIS_URL, testRedis } from '../helpers/redis.ts';

const undo: (() => unknown)[] = [];
afterEach(async () => {
  for (const u of undo.splice(0).reverse()) await u();
});

describe('removeQueuedJobs', () => {
  it('removes waiting, delayed and prioritized jobs, leaves held ones, and counts no finished job', async () => {
    const { prefix, redis } = testRedis((u) => undo.push(u));
    const queue = new Queue(QUEUES.search, { connection: redis, prefix });
    const blocking = createRedis(REDIS_URL, 'worker');
    const worker = new Worker(QUEUES.search, null, {
      connection: blocking,
      prefix,
      autorun: false,
    });
    undo.push(
      () => blocking.quit(),
      () => queue.close(),
      () => worker.close(),
    );
    const run = 'run-1';
    const add = (key: string, opts = {}) =>
      queue.add('search', { key }, { jobId: searchJobId(run, key), ...opts });
    await add('held');
    const held = await worker.getNextJob('token-1');
    expect(held?.id).toBe(searchJobId(run, 'held'));
    // A job dropped by a worker (its run was stopped): failed, kept, its task unfinished.
    await add('dropped');
    const dropped = await worker.getNextJob('token-2');
    expect(dropped?.id).toBe(searchJobId(run, 'dropped'));
    await dropped!.moveToFailed(new Error('the run was cancelled'), 'token-2', false);
    await add('waiting');
    await add('delayed', { delay: 60_000 });
    await add('prioritized', { priority: 5 });
    // A task whose job finished and left the queue after the task list was read.
    const finished = await add('finished');
    await finished.remove();

    const keys = [
      'held',
      'waiting',
      'delayed',
      'prioritized',
      'finished',
      'dropped',
      'never-enqueued',
    ];
    expect(await removeQueuedJobs(queue, redis, run, keys)).toBe(3);
    expect(await queue.getFailedCount()).toBe(1);
    expect(await queue.getJobCounts('waiting', 'delayed', 'prioritized', 'active')).toEqual({
      waiting: 0,
      delayed: 0,
      prioritized: 0,
      active: 1,
    });
    expect(await removeQueuedJobs(queue, redis, run, keys)).toBe(0);
  });

  it('works through more tasks than one batch', async () => {
    const { prefix, redis } = testRedis((u) => undo.push(u));
    const queue = new Queue(QUEUES.search, { connection: redis, prefix });
    undo.push(() => queue.close());
    const keys = Array.from({ length: 1203 }, (_, i) => `t${String(i).padStart(5, '0')}`);
    await queue.addBulk(
      keys
        .filter((_, i) => i % 3 !== 0)
        .map((key) => ({ name: 'search', data: {}, opts: { jobId: searchJobId('r', key) } })),
    );
    expect(await removeQueuedJobs(queue, redis, 'r', keys)).toBe(802);
    expect(await queue.getWaitingCount()).toBe(0);
  });
});
