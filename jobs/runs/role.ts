/**
 * The `runs` role, on the host that owns the database (starting a run writes SQLite): the
 * worker of the `runs` queue (jobs/runs/processor.ts), which starts scheduled runs at their ticks and
 * delivers their webhooks, and the watch that notices finished scheduled runs whose webhook is
 * due (src/notify/due.ts).
 */
import { type Queue, Worker } from 'bullmq';
import type { Settings } from '../../src/config.ts';
import { enqueueDueNotifications } from '../../src/notify/due.ts';
import { sendNotification } from '../../src/notify/send.ts';
import { TickJobDataSchema } from '../../src/queue/job-data.ts';
import { QUEUES, RUNS_JOBS } from '../../src/queue/names.ts';
import { applyDueRetentions } from '../../src/run/prune/retention.ts';
import type { Runtime } from '../../src/run/runtime.ts';
import { openRunsQueue, RUNS_QUEUE_SETTINGS } from '../../src/schedule/schedulers.ts';
import { fail, runTick } from '../../src/schedule/tick.ts';
import type { Store } from '../../src/store/index.ts';
import type { RoleContext, RoleHandle } from '../role.ts';
import { createRunsProcessor, tickDueAt } from './processor.ts';
import { createWebhookAgent } from './webhook-agent.ts';

export interface RunsRoleOptions {
  /** This host's settings: the database path, the webhook secret, attempts and allow-list. */
  settings: Settings;
  /** How often finished runs with a pending webhook are looked for, in ms. Default 2000. */
  pollMs?: number;
  /** First retry delay of a webhook delivery, doubled at each attempt, in ms. Default 5000. */
  notifyBackoffMs?: number;
  /** Longest wait for a webhook receiver's answer, in ms. Default 10000. */
  notifyTimeoutMs?: number;
  /** New results a notification lists at most. Default 1000. */
  maxNewResults?: number;
  /** Jobs in hand at once (ticks of one pipeline never overlap whatever this is). Default 4. */
  concurrency?: number;
}

/** The runtime a tick starts runs with: this pool's connections and database. */
function runtimeOf(ctx: RoleContext, store: Store, settings: Settings): Runtime {
  return {
    settings,
    store,
    redis: ctx.redis,
    searchQueue: ctx.searchQueue,
    storeQueue: ctx.storeQueue,
    keys: ctx.keys,
    close: async () => {},
  };
}

export async function startRunsRole(
  ctx: RoleContext,
  options: RunsRoleOptions | undefined,
): Promise<RoleHandle> {
  const { store, log } = ctx;
  if (!store) throw new Error('the runs role needs the database');
  if (!options) throw new Error('the runs role needs the settings');
  const { settings } = options;
  const runtime = runtimeOf(ctx, store, settings);
  const queue = openRunsQueue(ctx.connection, ctx.prefix);
  queue.on('error', () => {}); // Redis going away is said once (src/cli/redis-watch.ts)
  const notifyTimeoutMs = options.notifyTimeoutMs ?? 10_000;
  // Webhooks connect only where the address rule (or HARVEST_NOTIFY_ALLOW_HOSTS) lets them.
  const webhooks = createWebhookAgent(settings, { connectTimeoutMs: notifyTimeoutMs });
  const processor = createRunsProcessor({
    async tick(data, dueAt) {
      // A tick that waited to be tried again (a locked database) outlives its scheduler's
      // changes: a removed schedule starts no run, and an applied one runs as applied now.
      const scheduler = await queue.getJobScheduler(data.pipelineName);
      const current = TickJobDataSchema.safeParse(scheduler?.template?.data);
      const row = await runTick(runtime, current.success ? current.data : data, dueAt, {
        logger: log,
        ...(scheduler
          ? {}
          : { unscheduled: 'its schedule was removed before the tick could start a run' }),
      });
      ctx.metrics?.tick(row.outcome);
      return row;
    },
    async notify(data, final) {
      const result = await sendNotification(store, data.runId, {
        secret: settings.notifySecret,
        final,
        timeoutMs: notifyTimeoutMs,
        dispatcher: webhooks,
        maxNewResults: options.maxNewResults ?? 1000,
        logger: log,
      });
      if (result.state !== 'already') ctx.metrics?.notification(result.state);
      return result;
    },
  });
  const worker = new Worker(QUEUES.runs, processor, {
    connection: ctx.connection,
    prefix: ctx.prefix,
    concurrency: options.concurrency ?? 4,
    settings: RUNS_QUEUE_SETTINGS,
  });
  worker.on('error', (error) => log.error({ err: error }, 'runs worker error'));
  worker.on('failed', (job, error) => {
    if (job?.name !== RUNS_JOBS.tick || job.attemptsMade < (job.opts.attempts ?? 1)) return;
    // A tick that used up its attempts no longer holds back the pipeline's next ticks.
    const data = TickJobDataSchema.safeParse(job.data);
    if (!data.success) return;
    try {
      fail(runtime, data.data.pipelineName, tickDueAt(job, data.data), error.message);
      ctx.metrics?.tick('failed');
    } catch (e) {
      log.error({ err: e, jobId: job.id }, 'could not record the failed tick');
    }
  });
  const watch = watchDueNotifications(ctx, store, queue, options);
  const retention = watchDueRetentions(ctx, store, options);
  return {
    async close() {
      await watch.stop();
      await retention.stop();
      await worker.close();
      await queue.close();
      await webhooks.close();
    },
  };
}

/** Enqueues due webhooks now and every `pollMs`, until stopped. */
function watchDueNotifications(
  ctx: RoleContext,
  store: Store,
  queue: Queue,
  options: RunsRoleOptions,
): { stop(): Promise<void> } {
  const policy = {
    attempts: options.settings.notifyAttempts,
    backoffMs: options.notifyBackoffMs ?? 5000,
  };
  let running: Promise<unknown> = Promise.resolve();
  let stopped = false;
  const poll = () => {
    if (stopped) return;
    running = enqueueDueNotifications(store, queue, policy).catch((error: unknown) =>
      ctx.log.error({ err: error }, 'could not enqueue due notifications'),
    );
  };
  poll();
  const timer = setInterval(() => void running.then(poll), options.pollMs ?? 2000);
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}

/**
 * Applies pipelines' `retention` after their scheduled runs have finished, now and every
 * `pollMs`, one prune at a time (src/run/prune/retention.ts), until stopped.
 */
function watchDueRetentions(
  ctx: RoleContext,
  store: Store,
  options: RunsRoleOptions,
): { stop(): Promise<void> } {
  let running: Promise<unknown> = Promise.resolve();
  let stopped = false;
  let busy = false;
  const poll = () => {
    // A prune may outlast the interval: the next one starts after it.
    if (stopped || busy) return;
    busy = true;
    running = applyDueRetentions(store, { dataDir: options.settings.dataDir, logger: ctx.log })
      .catch((error: unknown) => ctx.log.error({ err: error }, 'could not apply retention'))
      .finally(() => {
        busy = false;
      });
  };
  poll();
  const timer = setInterval(poll, options.pollMs ?? 2000);
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
