/** `harvest worker`: a long-running pool; several may run at once, on one host or many. */
import { setFlagsFromString } from 'node:v8';
import { type Command, InvalidArgumentError } from 'commander';
import { startLocalPool } from '../../../jobs/local.ts';
import type { Pool } from '../../../jobs/pool.ts';
import { ROLE_HELP, ROLES, type Role } from '../../../jobs/role-names.ts';
import type { Settings } from '../../config.ts';
import { createLogger, type Logger } from '../../log.ts';
import type { ServedMetrics } from '../../metrics/index.ts';
import { suggestionSuffix } from '../../pipeline/issues.ts';
import { assertRedisReachable } from '../../queue/connection.ts';
import { openStore, type Store } from '../../store/index.ts';
import type { CommandContext } from '../context.ts';
import { EXIT } from '../exit-codes.ts';
import { concurrency, MAX_CONCURRENCY, port, positiveInt } from '../flags.ts';
import { migrationNotice } from '../migration-notice.ts';
import {
  isMissingJobLog,
  isRedisConnectionLog,
  type RedisWatchEvents,
  watchRedis,
} from '../redis-watch.ts';
import { onStopSignals } from '../signals.ts';

interface WorkerOptions {
  roles: Role[];
  concurrency: number;
  lockDuration: number;
  stalledInterval: number;
  metricsPort?: number;
  metricsHost: string;
}

function parseRoles(value: string): Role[] {
  const roles = value.split(',').map((r) => r.trim());
  for (const r of roles) {
    if (!ROLES.includes(r as Role)) {
      const hint = suggestionSuffix(r, ROLES);
      throw new InvalidArgumentError(`unknown role "${r}"${hint} (roles: ${ROLES.join(', ')})`);
    }
  }
  return roles as Role[];
}

/** How often a graceful stop that is still waiting says so, in ms. */
const STILL_STOPPING_MS = 5000;
/** What a worker says when Redis lost its data. */
const JOBS_GONE =
  'the queued jobs of unfinished runs are gone; `harvest status` lists them, `harvest run --resume RUN` enqueues one again';

export function registerWorker(program: Command, ctx: CommandContext): void {
  program
    .command('worker')
    .description('Run a worker pool until SIGINT/SIGTERM (in-flight calls finish first).')
    .option(
      '--roles <roles>',
      `comma-separated: ${ROLES.map((r) => `${r} (${ROLE_HELP[r]})`).join(', ')}`,
      parseRoles,
      [...ROLES],
    )
    .option(
      '-c, --concurrency <n>',
      `searches in flight in this process, at most ${MAX_CONCURRENCY} (more: start more workers)`,
      concurrency,
      16,
    )
    .option(
      '--lock-duration <ms>',
      'how long a job stays claimed by a worker that stopped answering',
      positiveInt,
      30_000,
    )
    .option(
      '--stalled-interval <ms>',
      'how often jobs of dead workers are looked for',
      positiveInt,
      15_000,
    )
    .option('--metrics-port <port>', 'serve Prometheus metrics on http://HOST:PORT/metrics', port)
    .option('--metrics-host <host>', 'address the metrics listen on', '127.0.0.1')
    .addHelpText(
      'after',
      `
Examples:
  harvest worker                                # every role, on the host that owns the database
  harvest worker --roles search -c 32           # extra search capacity on another host
  harvest worker --metrics-port 9464            # and Prometheus metrics on 127.0.0.1:9464/metrics
  HARVEST_MEDIA_CONCURRENCY=32 harvest worker --roles media   # more media downloads`,
    )
    .action((opts: WorkerOptions) => runWorker(ctx, opts));
}

/** Runs a pool until a stop signal, then stops it gracefully (a second signal forces it). */
async function runWorker(ctx: CommandContext, opts: WorkerOptions): Promise<void> {
  const settings = ctx.settings();
  // Set once Redis has gone away or lost its keys: jobs in hand then end on missing keys.
  const redisLost = { value: false };
  // Redis going away is logged once by the watch below: its repeats stay out of the logs, and
  // so do the jobs it took with it.
  const logger = createLogger({
    level: settings.logLevel ?? 'info',
    format: settings.logFormat,
    drop: (line) => isRedisConnectionLog(line) || (redisLost.value && isMissingJobLog(line)),
  });
  await assertRedisReachable(settings.redisUrl);
  const notices = redisNotices(
    logger,
    () => {
      redisLost.value = true;
    },
    // Call records on their way through the store queue may have gone with the data.
    () => void pool?.redisLostData(),
  );
  const watch = await watchRedis(settings.redisUrl, settings.queuePrefix, notices);
  let store: Store | undefined;
  let metrics: ServedMetrics | undefined;
  let pool: Pool | undefined;
  // Installed before anything starts: a Ctrl-C that comes while the pool starts, or right after
  // 'worker started' is out, must stop it gracefully, not kill it by the signal's default action.
  const stop = stopSignals(logger, () => pool, settings.stopGraceMs);
  try {
    store = onDatabaseHost(opts.roles) ? openDatabase(settings, logger) : undefined;
    metrics = await serveMetrics(settings, opts, store, logger);
    pool = await startLocalPool(settings, {
      roles: opts.roles,
      concurrency: opts.concurrency,
      lockDurationMs: opts.lockDuration,
      stalledIntervalMs: opts.stalledInterval,
      store,
      metrics: metrics?.pool,
      logger,
    });
    // A worker that neither searches nor downloads (the store worker beside search workers on
    // other hosts) keeps little alive but would let the garbage of applying store jobs pile up
    // in its old generation until the run ends: it sizes its heap for memory. Only now, once
    // the pool's threads run: V8 applies the flag to threads started after it, where it costs
    // speed.
    if (opts.roles.every((r) => r === 'store' || r === 'runs')) {
      setFlagsFromString('--optimize-for-size');
    }
    logger.info(
      { roles: opts.roles, concurrency: opts.concurrency, workerId: pool.workerId },
      'worker started',
    );
    await stop.requested;
    await closeSayingSo(pool, logger);
  } finally {
    // Also when starting failed (a port in use, say): an open connection would keep the
    // process alive after its error was reported.
    await watch.close();
    await metrics?.close();
    store?.close();
    stop.remove();
  }
  logger.info('worker stopped');
}

/**
 * What the worker says as Redis goes away and comes back; `lost` is told it may have lost data,
 * `dataLost` that it has.
 */
function redisNotices(logger: Logger, lost: () => void, dataLost: () => void): RedisWatchEvents {
  return {
    lost: (where, reason) => {
      lost();
      logger.warn({ reason }, `Redis at ${where} is not reachable: waiting for it to come back`);
    },
    back: (keptData) => {
      if (keptData) {
        logger.info('Redis is back: working on');
        return;
      }
      logger.warn(`Redis came back without its data (it restarted without saving): ${JOBS_GONE}`);
      dataLost();
    },
    emptied: () => {
      lost();
      logger.warn(`Redis lost its data (its keys were deleted while it answered): ${JOBS_GONE}`);
      dataLost();
    },
  };
}

/**
 * The first stop signal resolves `requested`; the second stops the pool at once and exits.
 * `remove` takes the handlers off again.
 */
function stopSignals(
  logger: Logger,
  pool: () => Pool | undefined,
  graceMs: number,
): { requested: Promise<void>; remove(): void } {
  let stopRequested!: () => void;
  const requested = new Promise<void>((resolve) => {
    stopRequested = resolve;
  });
  const remove = onStopSignals(
    {
      first: (signal) => {
        logger.info(
          { signal, graceMs },
          'finishing calls in flight, then stopping (again, or once the grace period is over, to force)',
        );
        stopRequested();
      },
      second: async (signal) => {
        logger.warn({ signal }, 'stopping now: calls in flight are recorded as lost');
        await pool()?.forceClose(`stopped by ${signal} before the answer arrived`);
        process.exit(EXIT.NOT_FINISHED);
      },
    },
    graceMs,
  );
  return { requested, remove };
}

/** Roles that need the database, so the host that owns it. */
function onDatabaseHost(roles: readonly Role[]): boolean {
  return roles.some((r) => r === 'store' || r === 'runs' || r === 'media');
}

function openDatabase(settings: Settings, logger: Logger): Store {
  return openStore(settings.dbPath, {
    onMigrate: (step) => logger.info(step, migrationNotice(step)),
  });
}

/** Serves Prometheus metrics when `--metrics-port` is given (loaded only then). */
async function serveMetrics(
  settings: Settings,
  opts: WorkerOptions,
  store: Store | undefined,
  logger: Logger,
): Promise<ServedMetrics | undefined> {
  if (opts.metricsPort === undefined) return undefined;
  const { startWorkerMetrics } = await import('../../metrics/index.ts');
  const metrics = await startWorkerMetrics(settings, {
    host: opts.metricsHost,
    port: opts.metricsPort,
    store,
    logger,
  });
  logger.info({ url: metrics.url }, 'serving metrics');
  return metrics;
}

/**
 * Closes the pool gracefully. It waits for Redis to take the records of calls in flight: while
 * Redis is away it can wait for good, so it says so now and then rather than seem to hang.
 */
async function closeSayingSo(pool: Pool, logger: Logger): Promise<void> {
  const stillStopping = setInterval(
    () =>
      logger.warn(
        'still stopping: waiting for calls in flight to end and for Redis to take their records (is Redis reachable?); send the signal again to stop now',
      ),
    STILL_STOPPING_MS,
  );
  try {
    await pool.close();
  } finally {
    clearInterval(stillStopping);
  }
}
