/** Running workers in this process (`harvest run --local`, `harvest worker`, `npm start`). */
import { createApiClient } from '../api/index.ts';
import type { Settings } from '../config.ts';
import { UsageError } from '../errors.ts';
import type { Logger } from '../log.ts';
import { type Pool, type Role, startPool } from '../queue/pool.ts';
import type { Store } from '../store/index.ts';

export interface LocalPoolOptions {
  roles: readonly Role[];
  concurrency?: number;
  store?: Store;
  logger: Logger;
  lockDurationMs?: number;
  stalledIntervalMs?: number;
}

export async function startLocalPool(settings: Settings, options: LocalPoolOptions): Promise<Pool> {
  let client: ReturnType<typeof createApiClient> | undefined;
  if (options.roles.includes('search')) {
    if (!settings.apiKey) {
      throw new UsageError(
        'HARVEST_API_KEY is not set: the search role needs an API key (try `npm start` for the offline sandbox demo)',
      );
    }
    client = createApiClient({ baseUrl: settings.apiUrl, apiKey: settings.apiKey });
  }
  return startPool({
    redisUrl: settings.redisUrl,
    prefix: settings.queuePrefix,
    roles: options.roles,
    ...(options.concurrency === undefined ? {} : { concurrency: options.concurrency }),
    ...(client ? { client } : {}),
    ...(options.store ? { store: options.store } : {}),
    ...(options.lockDurationMs ? { lockDurationMs: options.lockDurationMs } : {}),
    ...(options.stalledIntervalMs ? { stalledIntervalMs: options.stalledIntervalMs } : {}),
    logger: options.logger,
  });
}

/** Closes the pool on the first SIGINT/SIGTERM (in-flight calls finish); a second one exits. */
export function closeOnSignals(pool: Pool, logger: Logger, onClosed?: () => void): () => void {
  let signalled = false;
  const handler = (signal: NodeJS.Signals) => {
    if (signalled) {
      logger.warn({ signal }, 'second signal: exiting now');
      process.exit(130);
    }
    signalled = true;
    logger.info({ signal }, 'finishing calls in flight, then stopping (signal again to force)');
    void pool.close().then(onClosed);
  };
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
  return () => {
    process.off('SIGINT', handler);
    process.off('SIGTERM', handler);
  };
}
