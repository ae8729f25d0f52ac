/** Redis connections for queues and workers (ioredis). */
import { Redis } from 'ioredis';
import { maskUrl } from '../config.ts';
import { HarvestError } from '../errors.ts';

/**
 * Workers need `maxRetriesPerRequest: null` (BullMQ blocks on Redis); commands from the CLI
 * should fail fast instead, so a missing Redis is reported rather than waited on forever.
 */
export function createRedis(url: string, role: 'worker' | 'client'): Redis {
  const redis = new Redis(url, {
    maxRetriesPerRequest: role === 'worker' ? null : 2,
    enableOfflineQueue: true,
    lazyConnect: false,
    connectionName: `harvest-${role}`,
    // harvest's own commands (budget, rate turns, journal) from many jobs at once go out in one
    // write per tick instead of one each. Not on BullMQ's connections: they block on Redis.
    enableAutoPipelining: role === 'client',
  });
  // Without a listener ioredis prints every failed reconnection ("Unhandled error event"); the
  // commands that live with Redis say once that it is gone (src/cli/redis-watch.ts), and the
  // commands sent meanwhile fail on their own.
  redis.on('error', () => {});
  return redis;
}

/** Pings Redis once, with a clear error that says how to start it. */
export async function assertRedisReachable(url: string, timeoutMs = 3000): Promise<void> {
  const redis = new Redis(url, {
    maxRetriesPerRequest: 0,
    lazyConnect: true,
    connectTimeout: timeoutMs,
    retryStrategy: () => null,
  });
  redis.on('error', () => {});
  try {
    await redis.connect();
    await redis.ping();
  } catch (error) {
    throw new HarvestError(
      'REDIS_UNREACHABLE',
      `Redis is not reachable at ${maskUrl(url)}. Start it with \`docker compose up -d redis\` or ` +
        '`redis-server --daemonize yes`, or point REDIS_URL at a running server.',
      { cause: error, exitCode: 3 },
    );
  } finally {
    redis.disconnect();
  }
}
