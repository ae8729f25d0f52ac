import { Queue } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { QUEUES } from '../../../src/queue/names.ts';
import {
  parsePause,
  pauseQueue,
  queuePause,
  readPause,
  resumeQueue,
} from '../../../src/queue/pause.ts';
import { useCleanup } from '../../helpers/cleanup.ts';
import { testRedis } from '../../helpers/redis.ts';

const defer = useCleanup();

function setup() {
  const { prefix, redis } = testRedis(defer);
  const queue = new Queue(QUEUES.search, { connection: redis, prefix });
  defer(() => queue.close());
  return { queue, redis, key: `${prefix}:h:paused-reason` };
}

describe('a queue paused for a reason', () => {
  it('keeps the latest reason, or the first, as asked', async () => {
    const { queue, redis, key } = setup();
    await pauseQueue(queue, redis, key, { code: 'API_KEY_INVALID', reason: 'a' }, 'latest');
    await pauseQueue(queue, redis, key, { code: 'INSUFFICIENT_CREDITS', reason: 'b' }, 'latest');
    expect(await queuePause(queue, redis, key)).toMatchObject({
      code: 'INSUFFICIENT_CREDITS',
      reason: 'b',
    });
    await pauseQueue(queue, redis, key, { code: 'API_OUTAGE', reason: 'c' }, 'first');
    expect((await readPause(redis, key))?.code).toBe('INSUFFICIENT_CREDITS');
    expect(await queue.isPaused()).toBe(true);
  });

  it('resumes only the pause of the code it is told, and says which it ended', async () => {
    const { queue, redis, key } = setup();
    await pauseQueue(queue, redis, key, { code: 'API_KEY_INVALID', reason: 'key' }, 'latest');
    expect(await resumeQueue(queue, redis, key, 'API_OUTAGE')).toBeUndefined();
    expect(await queue.isPaused()).toBe(true);
    expect(await resumeQueue(queue, redis, key)).toMatchObject({ code: 'API_KEY_INVALID' });
    expect(await queue.isPaused()).toBe(false);
    expect(await readPause(redis, key)).toBeUndefined();
    expect(await queuePause(queue, redis, key)).toBeUndefined();
  });

  it('says a queue paused without a reason was paused by hand', async () => {
    const { queue, redis, key } = setup();
    await queue.pause();
    expect(await queuePause(queue, redis, key)).toEqual({
      code: 'PAUSED',
      reason: 'the search queue was paused by hand',
      at: 0,
    });
  });

  it('reads a reason that is not harvest’s as it is', () => {
    expect(parsePause(null)).toBeUndefined();
    expect(parsePause('maintenance')).toEqual({ code: 'PAUSED', reason: 'maintenance', at: 0 });
    expect(parsePause('{"code":"X","reason":"y","at":5}')).toEqual({
      code: 'X',
      reason: 'y',
      at: 5,
    });
    expect(parsePause('x'.repeat(900))?.reason).toHaveLength(500);
  });
});
