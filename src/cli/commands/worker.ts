/** `harvest worker`: a long-running pool; several may run at once, on one host or many. */
import { setFlagsFromString } from 'node:v8';
import { type Command, InvalidArgumentError } from 'commander';
import { startLocalPool } from '../../../jobs/local.ts';
import type { Pool } from '../../../jobs/pool.ts';
import { ROLE_HELP, ROLES, type Role } from '../../../jobs/role-names.ts';
import { createLogger } from '../../log.ts';
import type { ServedMetrics } from '../../metrics/index.ts';
import { suggestionSuffix } from '../../pipeline/issues.ts';
import { assertRedisReachable } from '../../queue/connection.ts';
import { openStore } from '../../store/index.ts';
import type { CommandContext } from '../context.ts';
import { EXIT } from '../exit-codes.ts';
import { port, positiveInt } from '../flags.ts';
import { migrationNotice } from '../migration-notice.ts';
import { isRedisConnectionLog, watchRedis } from '../redis-watch.ts';
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
    .option('-c, --concurrency <n>', 'searches in flight in this process', positiveInt, 16)
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
    .action(async (opts: WorkerOptions) => {
      const settings = ctx.settings();
      // Redis going away is logged once by the watch below: its repeats stay out of the logs.
      const logger = createLogger({
        level: settings.logLevel ?? 'info',
        format: settings.logFormat,
        drop: isRedisConnectionLog,
      });
      await assertRedisReachable(settings.redisUrl);
      const watch = await watchRedis(settings.redisUrl, settings.queuePrefix, {
        lost: (where, reason) =>
          logger.warn(
            { reason },
            `Redis at ${where} is not reachable: waiting for it to come back`,
          ),
        back: (keptData) =>
          keptData
            ? logger.info('Redis is back: working on')
            : logger.warn(
                `Redis came back without its data (it restarted without saving): ${JOBS_GONE}`,
              ),
        emptied: () =>
          logger.warn(
            `Redis lost its data (its keys were deleted while it answered): ${JOBS_GONE}`,
          ),
      });
      let store: ReturnType<typeof openStore> | undefined;
      let metrics: ServedMetrics | undefined;
      let pool: Pool | undefined;
      // Installed before anything starts: a Ctrl-C that comes while the pool starts, or right
      // after 'worker started' is out, must stop it gracefully, not kill it by the signal's
      // default action.
      let stopRequested!: () => void;
      const stopped = new Promise<void>((resolve) => {
        stopRequested = resolve;
      });
      const removeSignals = onStopSignals({
        first: (signal) => {
          logger.info({ signal }, 'finishing calls in flight, then stopping (again to force)');
          stopRequested();
        },
        second: async (signal) => {
          logger.warn({ signal }, 'second signal: stopping now');
          await pool?.forceClose(`stopped by ${signal} before the answer arrived`);
          process.exit(EXIT.NOT_FINISHED);
        },
      });
      try {
        const onDatabaseHost = opts.roles.some(
          (r) => r === 'store' || r === 'runs' || r === 'media',
        );
        store = onDatabaseHost
          ? openStore(settings.dbPath, {
              onMigrate: (step) => logger.info(step, migrationNotice(step)),
            })
          : undefined;
        metrics =
          opts.metricsPort === undefined
            ? undefined
            : await (await import('../../metrics/index.ts')).startWorkerMetrics(settings, {
                host: opts.metricsHost,
                port: opts.metricsPort,
                store,
                logger,
              });
        if (metrics) logger.info({ url: metrics.url }, 'serving metrics');
        pool = await startLocalPool(settings, {
          roles: opts.roles,
          concurrency: opts.concurrency,
          lockDurationMs: opts.lockDuration,
          stalledIntervalMs: opts.stalledInterval,
          store,
          metrics: metrics?.pool,
          logger,
        });
        // A worker that neither searches nor downloads (the store worker beside search workers
        // on other hosts) keeps little alive but would let the garbage of applying store jobs
        // pile up in its old generation until the run ends: it sizes its heap for memory. Only
        // now, once the pool's threads run: V8 applies the flag to threads started after it,
        // where it costs speed.
        if (opts.roles.every((r) => r === 'store' || r === 'runs')) {
          setFlagsFromString('--optimize-for-size');
        }
        logger.info(
          { roles: opts.roles, concurrency: opts.concurrency, workerId: pool.workerId },
          'worker started',
        );
        await stopped;
        // A graceful stop waits for Redis to take the records of calls in flight: while Redis
        // is away it can wait for good, so say so now and then rather than seem to hang.
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
      } finally {
        // Also when starting failed (a port in use, say): an open connection would keep the
        // process alive after its error was reported.
        await watch.close();
        await metrics?.close();
        store?.close();
        removeSignals();
      }
      logger.info('worker stopped');
    });
}
