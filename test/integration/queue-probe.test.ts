/** The quick look of `harvest status` agrees with BullMQ about pauses and waiting store jobs. */
import { Queue } from 'bullmq';
import { afterEach, describe, expect, it } from 'vitest';
import { queuesQuiet } from '../../src/cli/queue-probe.ts';
import { QUEUES } from '../../src/queue/names.ts';
import { testRedis } from '../helpers/redis.ts';

const undo: (() => unknown)[] = [];
afterEach(async () => {
  for (const u of undo.splice(0).reverse()) await u();
});

describe('queuesQuiet', () => {
  it('is false while the search queue is paused or a store job waits, fails or is delayed', async () => {
    const { prefix, redis } = testRedis((u) => undo.push(u));
    const search = new Queue(QUEUES.search, { connection: redis, prefix });
    const store = new Queue(QUEUES.store, { connection: redis, prefix });
    undo.push(
      () => search.close(),
      () => store.close(),
    );
    expect(await queuesQuiet(redis, prefix)).toBe(true);
    await search.pause();
    expect(await queuesQuiet(redis, prefix)).toBe(false);
    await search.resume();
    expect(await queuesQuiet(redis, prefix)).toBe(true);
    const job = await store.add('events', { events: [] });
    expect(await queuesQuiet(redis, prefix)).toBe(false);
    await job.remove();
    expect(await queuesQuiet(redis, prefix)).toBe(true);
    await store.add('events', { events: [] }, { delay: 60_000 });
    expect(await queuesQuiet(redis, prefix)).toBe(false);
    await store.obliterate({ force: true });
    expect(await queuesQuiet(redis, prefix)).toBe(true);
    await store.pause();
    await store.add('events', { events: [] });
    expect(await queuesQuiet(redis, prefix)).toBe(false);
  });
});
