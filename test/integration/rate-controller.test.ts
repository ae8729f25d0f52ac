/** The shared rate controller on real Redis and a real BullMQ queue. */
import { Queue } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { harvestKeys, QUEUES } from '../../src/queue/names.ts';
import { RateController } from '../../src/queue/rate-controller.ts';
import { useCleanup } from '../helpers/cleanup.ts';
import { capturedLogger } from '../helpers/logger.ts';
import { testRedis } from '../helpers/redis.ts';

const defer = useCleanup();

describe('RateController', () => {
  it('a 429 that meets another worker adjusting waits for it, so a global limit is set', async () => {
    const { prefix, redis } = testRedis(defer);
    const queue = new Queue(QUEUES.search, { connection: redis, prefix });
    defer(() => queue.close());
    const keys = harvestKeys(prefix);
    const rate = new RateController(redis, keys.rate, queue, capturedLogger().logger);
    // Another worker holds the controller's lock for 200 ms.
    expect(await redis.set(`${keys.rate}:lock`, '1', 'PX', 200, 'NX')).toBe('OK');
    await rate.onRateLimited(5000, 'Rate limit exceeded');

    expect((await rate.state()).ratePerSec).toBeGreaterThan(0);
    // BullMQ honours the 429's wait only while the queue has a global rate limit.
    expect(await queue.getRateLimitTtl()).toBeGreaterThan(4000);
  });
});
