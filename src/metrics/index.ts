/**
 * `harvest worker --metrics-port P`: the worker's metrics (registry.ts) served on
 * `host:P/metrics` (server.ts). Loaded only when asked for, so prom-client stays out of every
 * other command.
 */

import type { Settings } from '../config.ts';
import type { Logger } from '../log.ts';
import { createRedis } from '../queue/connection.ts';
import { harvestKeys } from '../queue/names.ts';
import { apiKeyId } from '../queue/rate/hold.ts';
import type { Store } from '../store/index.ts';
import type { PoolMetrics } from './pool.ts';
import { createWorkerMetrics } from './registry.ts';
import { serveMetrics } from './server.ts';

export interface ServedMetrics {
  /** What the pool reports to. */
  readonly pool: PoolMetrics;
  readonly url: string;
  close(): Promise<void>;
}

export async function startWorkerMetrics(
  settings: Settings,
  options: { host: string; port: number; store?: Store | undefined; logger: Logger },
): Promise<ServedMetrics> {
  const redis = createRedis(settings.redisUrl, 'client');
  redis.on('error', () => {});
  const metrics = createWorkerMetrics({
    redis,
    prefix: settings.queuePrefix,
    keys: harvestKeys(settings.queuePrefix),
    rateModelKey: harvestKeys(settings.queuePrefix).rateOf(apiKeyId(settings.apiKey)).rate,
    store: options.store,
    logger: options.logger,
  });
  let server: Awaited<ReturnType<typeof serveMetrics>>;
  try {
    server = await serveMetrics(metrics, options);
  } catch (error) {
    await metrics.close();
    redis.disconnect();
    throw error;
  }
  return {
    pool: metrics,
    url: server.url,
    async close() {
      await server.close();
      await metrics.close();
      await redis.quit().catch(() => {});
    },
  };
}
