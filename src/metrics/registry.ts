/**
 * A worker's Prometheus metrics (prom-client). What only this process knows (its calls, 429s,
 * credits, ticks, webhook attempts) is counted as the pool reports it (PoolMetrics); what every
 * worker shares (jobs by queue and state, the allowed rate, media on the database host) is read
 * from Redis and SQLite when scraped.
 */
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { Counter, collectDefaultMetrics, Gauge, Registry } from 'prom-client';
import type { Logger } from '../log.ts';
import { type HarvestKeys, QUEUES } from '../queue/names.ts';
import { NOTIFICATION_STATES, type Store, type StoreEvent, TICK_OUTCOMES } from '../store/index.ts';
import type { PoolMetrics } from './pool.ts';
import { allowedRatePerSec } from './rate.ts';

export interface MetricsSources {
  /** A client connection (commands fail fast rather than wait). */
  redis: Redis;
  prefix: string;
  keys: HarvestKeys;
  /** The rate model of the pool's API key (`keys.rateOf(apiKeyId)`). Default `keys.rate`. */
  rateModelKey?: string;
  /** The database, on its host: media counts come from it. */
  store?: Store | undefined;
  logger: Logger;
}

export interface WorkerMetrics extends PoolMetrics {
  readonly contentType: string;
  /** The Prometheus text exposition of every metric. */
  text(): Promise<string>;
  close(): Promise<void>;
}

/** A gauge read when scraped; a source that fails leaves it without samples, and says so. */
function collected(
  registry: Registry,
  log: Logger,
  spec: { name: string; help: string; labelNames?: string[] },
  read: (gauge: Gauge) => Promise<void> | void,
): void {
  // One collection at a time: scrapes that overlap (two Prometheus servers, a curl during a
  // scrape) share the gauge, and one's reset would wipe what another had set between its awaits.
  let collecting: Promise<void> | undefined;
  new Gauge({
    ...spec,
    labelNames: spec.labelNames ?? [],
    registers: [registry],
    async collect() {
      collecting ??= (async () => {
        this.reset();
        try {
          await read(this);
        } catch (error) {
          this.reset();
          log.warn({ err: error, metric: spec.name }, 'metric not collected');
        }
      })().finally(() => {
        collecting = undefined;
      });
      await collecting;
    },
  });
}

/** Gauges of what every worker shares, read from Redis (and SQLite, on its host) when scraped. */
function registerSharedGauges(
  registry: Registry,
  sources: MetricsSources,
  queues: readonly Queue[],
): void {
  const { redis, keys, store, logger: log } = sources;
  collected(
    registry,
    log,
    {
      name: 'harvest_queue_jobs',
      help: 'Jobs per queue and state (every worker: read from Redis).',
      labelNames: ['queue', 'state'],
    },
    async (g) => {
      for (const q of queues) {
        for (const [state, n] of Object.entries(await q.getJobCounts()))
          g.set({ queue: q.name, state }, n);
      }
    },
  );
  collected(
    registry,
    log,
    {
      name: 'harvest_queue_paused',
      help: '1 while the queue is paused (the search queue: 401/402 from the API).',
      labelNames: ['queue'],
    },
    async (g) => {
      for (const q of queues) g.set({ queue: q.name }, (await q.isPaused()) ? 1 : 0);
    },
  );
  collected(
    registry,
    log,
    {
      name: 'harvest_rate_allowed_per_second',
      help: "API calls per second the pool's API key may make, learned from its 429s by the shared rate controller (+Inf while no limit is known).",
    },
    async (g) =>
      g.set(
        allowedRatePerSec(await redis.hgetall(sources.rateModelKey ?? keys.rate)) ??
          Number.POSITIVE_INFINITY,
      ),
  );
  if (store) {
    collected(
      registry,
      log,
      {
        name: 'harvest_media_files',
        help: 'Media files of every run by status: saved, expired, pending, failed (from the database).',
        labelNames: ['status'],
      },
      (g) => {
        for (const [status, n] of Object.entries(store.gauges.mediaByStatus()))
          g.set({ status }, n);
      },
    );
  }
}

/** Counters of what only this process knows; every label value is listed from the start. */
function registerProcessCounters(registry: Registry) {
  const counters = {
    calls: new Counter({
      name: 'harvest_api_calls_total',
      help: 'API calls this process made, by HTTP status ("none": no answer), outcome and purpose.',
      labelNames: ['status', 'outcome', 'purpose'],
      registers: [registry],
    }),
    rateLimited: new Counter({
      name: 'harvest_api_rate_limited_total',
      help: '429 answers this process got.',
      registers: [registry],
    }),
    credits: new Counter({
      name: 'harvest_api_credits_used_total',
      help: 'Credits the API reported for the calls this process made.',
      registers: [registry],
    }),
    ticks: new Counter({
      name: 'harvest_schedule_ticks_total',
      help: 'Schedule ticks this process handled, by outcome (started, skipped, failed).',
      labelNames: ['outcome'],
      registers: [registry],
    }),
    notifications: new Counter({
      name: 'harvest_notifications_total',
      help: 'Webhook delivery attempts this process made, by the state they left.',
      labelNames: ['state'],
      registers: [registry],
    }),
  };
  for (const outcome of TICK_OUTCOMES) {
    if (outcome !== 'starting') counters.ticks.inc({ outcome }, 0);
  }
  for (const state of NOTIFICATION_STATES) counters.notifications.inc({ state }, 0);
  return counters;
}

export function createWorkerMetrics(sources: MetricsSources): WorkerMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'harvest_' });
  const queues = Object.values(QUEUES).map((name) => {
    const queue = new Queue(name, { connection: sources.redis, prefix: sources.prefix });
    queue.on('error', () => {}); // Redis going away is said once (src/cli/redis-watch.ts)
    return queue;
  });
  registerSharedGauges(registry, sources, queues);
  const { calls, rateLimited, credits, ticks, notifications } = registerProcessCounters(registry);

  return {
    contentType: registry.contentType,
    text: () => registry.metrics(),
    recorded(events: readonly StoreEvent[]) {
      for (const e of events) {
        if (e.type !== 'call') continue;
        calls.inc({
          status: e.status === null ? 'none' : String(e.status),
          outcome: e.outcome,
          purpose: e.purpose ?? 'search',
        });
        if (e.status === 429) rateLimited.inc();
        if (e.creditsUsed) credits.inc(e.creditsUsed);
      }
    },
    tick: (outcome) => ticks.inc({ outcome }),
    notification: (state) => notifications.inc({ state }),
    async close() {
      await Promise.all(queues.map((q) => q.close()));
      registry.clear();
    },
  };
}
