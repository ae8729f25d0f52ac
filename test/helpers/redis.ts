/** A fresh Redis key prefix per test, and removal of every key under it afterwards. */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { createRedis } from '../../src/queue/connection.ts';

export const REDIS_URL = 'redis://127.0.0.1:6379';

export function freshPrefix(): string {
  return `test-${randomUUID()}`;
}

/** Deletes every key under `prefix` (SCAN, never FLUSHDB). */
export async function deletePrefix(prefix: string): Promise<number> {
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 2 });
  let deleted = 0;
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) deleted += await redis.del(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
  return deleted;
}

/** A fresh prefix and a client connection; `defer` removes the prefix's keys and disconnects. */
export function testRedis(defer: (undo: () => unknown) => void): { prefix: string; redis: Redis } {
  const prefix = freshPrefix();
  defer(() => deletePrefix(prefix));
  const redis = createRedis(REDIS_URL, 'client');
  defer(() => redis.quit());
  return { prefix, redis };
}
