/**
 * A quick look at the queues for `harvest status`, with ioredis alone: is the search queue
 * paused, does the store queue hold any job. When neither, there is nothing more to read, and
 * status never loads BullMQ (a fifth of a second at every start). The keys are BullMQ's
 * (`<prefix>:<queue>:meta` and the store queue's state lists and sets);
 * test/integration/queue-probe.test.ts checks them against BullMQ itself.
 */
import type { Redis } from 'ioredis';
import { QUEUES } from '../queue/names.ts';

const JOB_STATES = [
  'wait',
  'paused',
  'active',
  'delayed',
  'prioritized',
  'failed',
  'waiting-children',
];

/** True when the search queue is not paused and the store queue holds no job at all. */
export async function queuesQuiet(redis: Redis, prefix: string): Promise<boolean> {
  const [paused, jobs] = await Promise.all([
    redis.hexists(`${prefix}:${QUEUES.search}:meta`, 'paused'),
    redis.exists(...JOB_STATES.map((state) => `${prefix}:${QUEUES.store}:${state}`)),
  ]);
  return paused === 0 && jobs === 0;
}
