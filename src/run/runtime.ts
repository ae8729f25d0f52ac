/**
 * What the run, worker and status commands share on the host that owns the database: the
 * store, the search queue and a Redis client, opened once and closed together.
 */
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Settings } from '../config.ts';
import { assertRedisReachable, createRedis } from '../queue/connection.ts';
import { type HarvestKeys, harvestKeys, QUEUES } from '../queue/names.ts';
import { type QueuePause, queuePause } from '../queue/pause.ts';
import { type OpenStoreOptions, openStore, type Store } from '../store/index.ts';

export interface Runtime {
  readonly settings: Settings;
  readonly store: Store;
  readonly redis: Redis;
  readonly searchQueue: Queue;
  readonly storeQueue: Queue;
  readonly keys: HarvestKeys;
  close(): Promise<void>;
}

export async function openRuntime(
  settings: Settings,
  options: Pick<OpenStoreOptions, 'onMigrate' | 'mustExist'> = {},
): Promise<Runtime> {
  await assertRedisReachable(settings.redisUrl);
  const store = openStore(settings.dbPath, options);
  const redis = createRedis(settings.redisUrl, 'client');
  const searchQueue = new Queue(QUEUES.search, { connection: redis, prefix: settings.queuePrefix });
  const storeQueue = new Queue(QUEUES.store, { connection: redis, prefix: settings.queuePrefix });
  // Without listeners BullMQ prints every failed reconnection; Redis going away is said once
  // by the command (src/cli/redis-watch.ts), and each operation fails on its own.
  searchQueue.on('error', () => {});
  storeQueue.on('error', () => {});
  return {
    settings,
    store,
    redis,
    searchQueue,
    storeQueue,
    keys: harvestKeys(settings.queuePrefix),
    async close() {
      await searchQueue.close();
      await storeQueue.close();
      await redis.quit().catch(() => {});
      store.close();
    },
  };
}

/** Why the search queue is paused, if it is (401/402 from the API). */
export function pausedReason(
  runtime: Pick<Runtime, 'redis' | 'searchQueue' | 'keys'>,
): Promise<QueuePause | undefined> {
  return queuePause(runtime.searchQueue, runtime.redis, runtime.keys.pausedReason);
}
