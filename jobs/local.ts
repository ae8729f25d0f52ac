/** Running workers in this process (`harvest run --local`, `harvest worker`, `npm start`). */
import { createApiClient } from '../src/api/index.ts';
import type { Settings } from '../src/config.ts';
import { UsageError } from '../src/errors.ts';
import type { Logger } from '../src/log.ts';
import type { PoolMetrics } from '../src/metrics/pool.ts';
import { apiKeyId } from '../src/queue/rate/hold.ts';
import type { FeederOptions } from '../src/run/feed/feeder.ts';
import type { Store } from '../src/store/index.ts';
import type { MediaRoleOptions } from './media/role.ts';
import { type Pool, type Role, startPool } from './pool.ts';
import type { RunsRoleOptions } from './runs/role.ts';
import { armKillPoint } from './search/kill-points.ts';

export interface LocalPoolOptions {
  roles: readonly Role[];
  concurrency?: number | undefined;
  store?: Store | undefined;
  logger: Logger;
  lockDurationMs?: number | undefined;
  stalledIntervalMs?: number | undefined;
  /** Counters only this pool knows, for `--metrics-port`. */
  metrics?: PoolMetrics | undefined;
  /** Runs role knobs beyond the settings (tests: faster polls and retries). */
  runs?: Omit<RunsRoleOptions, 'settings'>;
  /** Feeder knobs beyond the settings' window (tests: a short lease, a faster poll). */
  feeder?: Omit<FeederOptions, 'windowJobs'>;
  /** Media role knobs beyond the settings (tests: a resolver, a faster poll). */
  media?: Partial<Pick<MediaRoleOptions, 'resolve' | 'pollMs' | 'partialSweepMs'>>;
}

export async function startLocalPool(settings: Settings, options: LocalPoolOptions): Promise<Pool> {
  // For tests only (HARVEST_TEST_KILL_AT); unset, nothing is armed.
  armKillPoint(settings.testKillAt);
  let client: ReturnType<typeof createApiClient> | undefined;
  // One connection per search in flight: searches take seconds, and a call waiting for a free
  // connection is a slot doing nothing.
  const connections = Math.max(64, options.concurrency ?? 16);
  if (options.roles.includes('search')) {
    if (!settings.apiKey) {
      throw new UsageError(
        'HARVEST_API_KEY is not set: the search role needs an API key (try `npm start` for the offline sandbox demo)',
      );
    }
    client = createApiClient({
      baseUrl: settings.apiUrl,
      apiKey: settings.apiKey,
      maxResponseBytes: settings.maxResponseBytes,
      untimedSearchMs: settings.apiTimeoutMs,
      connections,
    });
  } else if (options.roles.includes('media') && settings.apiKey) {
    // Only to re-issue searches for fresh media URLs.
    client = createApiClient({
      baseUrl: settings.apiUrl,
      apiKey: settings.apiKey,
      maxResponseBytes: settings.maxResponseBytes,
      untimedSearchMs: settings.apiTimeoutMs,
    });
  }
  return startPool({
    redisUrl: settings.redisUrl,
    prefix: settings.queuePrefix,
    roles: options.roles,
    concurrency: options.concurrency,
    client,
    apiKeyId: apiKeyId(settings.apiKey),
    maxRateHoldMs: settings.maxRateHoldMs,
    store: options.store,
    lockDurationMs: options.lockDurationMs,
    stalledIntervalMs: options.stalledIntervalMs,
    apiProbeMaxMs: settings.apiProbeMaxMs,
    runs: { settings, ...options.runs },
    feeder: { windowJobs: settings.queueWindow, ...options.feeder },
    metrics: options.metrics,
    creditsAnomalyFactor: settings.creditsAnomalyFactor,
    media: {
      settings: settings.media,
      dataDir: settings.dataDir,
      apiUrl: settings.apiUrl,
      lockDurationMs: options.lockDurationMs,
      stalledIntervalMs: options.stalledIntervalMs,
      ...options.media,
    },
    logger: options.logger,
  });
}
