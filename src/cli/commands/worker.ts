/** `harvest worker`: a long-running pool; several may run at once, on one host or many. */
import { type Command, InvalidArgumentError } from 'commander';
import { createLogger } from '../../log.ts';
import { assertRedisReachable } from '../../queue/connection.ts';
import type { Role } from '../../queue/pool.ts';
import { closeOnSignals, startLocalPool } from '../../run/local.ts';
import { openStore } from '../../store/index.ts';
import type { CommandContext } from '../context.ts';
import { positiveInt } from './run.ts';

const ROLES: readonly Role[] = ['search', 'store'];

interface WorkerOptions {
  roles: Role[];
  concurrency: number;
  lockDuration: number;
  stalledInterval: number;
}

function parseRoles(value: string): Role[] {
  const roles = value.split(',').map((r) => r.trim());
  for (const r of roles) {
    if (!ROLES.includes(r as Role)) {
      throw new InvalidArgumentError(`unknown role "${r}" (roles: ${ROLES.join(', ')})`);
    }
  }
  return roles as Role[];
}

export function registerWorker(program: Command, ctx: CommandContext): void {
  program
    .command('worker')
    .description('Run a worker pool until SIGINT/SIGTERM (in-flight calls finish first).')
    .option(
      '--roles <roles>',
      'comma-separated: search (calls the API, any host), store (writes SQLite, the database host)',
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
    .addHelpText(
      'after',
      '\nExamples:\n  harvest worker                                # both roles, on the host that owns the database\n  harvest worker --roles search -c 32           # extra search capacity on another host',
    )
    .action(async (opts: WorkerOptions) => {
      const settings = ctx.settings();
      const logger = createLogger({ level: settings.logLevel ?? 'info' });
      await assertRedisReachable(settings.redisUrl);
      const store = opts.roles.includes('store') ? openStore(settings.dbPath) : undefined;
      const pool = await startLocalPool(settings, {
        roles: opts.roles,
        concurrency: opts.concurrency,
        lockDurationMs: opts.lockDuration,
        stalledIntervalMs: opts.stalledInterval,
        ...(store ? { store } : {}),
        logger,
      });
      logger.info(
        { roles: opts.roles, concurrency: opts.concurrency, workerId: pool.workerId },
        'worker started',
      );
      await new Promise<void>((resolve) => closeOnSignals(pool, logger, resolve));
      store?.close();
      logger.info('worker stopped');
    });
}
