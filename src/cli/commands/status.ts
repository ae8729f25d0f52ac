/** `harvest status`: runs and their counts, credits, errors by code, and why a run is paused. */
import { statSync } from 'node:fs';
import type { Command } from 'commander';
import type { Redis } from 'ioredis';
import { maskUrl, type Settings } from '../../config.ts';
import { HarvestError } from '../../errors.ts';
import { assertRedisReachable, createRedis } from '../../queue/connection.ts';
import { liveWorkersWithRole } from '../../queue/inflight.ts';
import { harvestKeys, QUEUES } from '../../queue/names.ts';
import type { WaitingRecords } from '../../queue/store-queue.ts';
import {
  FINISHED_RUN_STATUSES,
  type NotificationRow,
  openStore,
  type RunStatusReport,
} from '../../store/index.ts';
import type { CommandContext } from '../context.ts';
import { EXIT } from '../exit-codes.ts';
import { positiveInt } from '../flags.ts';
import { formatMediaSummary } from '../media-format.ts';
import { queuesQuiet } from '../queue-probe.ts';

/**
 * True when nothing is at `file` yet. A path that cannot be looked at (its folder is a file,
 * no permission) is not "no runs yet": opening it says what is wrong, as every command does.
 */
function noDatabaseYet(file: string): boolean {
  try {
    return statSync(file, { throwIfNoEntry: false }) === undefined;
  } catch {
    return false;
  }
}

export function registerStatus(program: Command, ctx: CommandContext): void {
  program
    .command('status')
    .description('Show runs (newest first), or one run in detail.')
    .argument('[run]', 'run id (default: list recent runs)')
    .option('--json', 'machine-readable output')
    .option('-n, --limit <n>', 'runs to list', positiveInt, 20)
    .addHelpText(
      'after',
      '\nExamples:\n  harvest status\n  harvest status 20261122T101500-a1b2 --json',
    )
    .action(async (runId: string | undefined, opts: { json?: boolean; limit: number }) => {
      const settings = ctx.settings();
      // Before the first run there is no database: that is no runs yet, not an error.
      if (!runId && noDatabaseYet(settings.dbPath)) {
        return print(opts.json ? '[]' : `no runs yet in ${settings.dbPath}`);
      }
      const store = openStore(settings.dbPath, { readonly: true });
      try {
        if (!runId) {
          const runs = store.runs.list({ limit: opts.limit });
          if (opts.json) return print(JSON.stringify(runs, null, 2));
          if (runs.length === 0) return print(`no runs yet in ${settings.dbPath}`);
          const { paused } = await queueState(settings);
          const held = paused && KEY_CODES.has(paused.code) ? ' (paused: API key)' : '';
          for (const r of runs) {
            const c = store.tasks.counts(r.id);
            const note = FINISHED_RUN_STATUSES.includes(r.status) ? '' : held;
            print(
              `${r.id}  ${r.status.padEnd(11)} ${r.pipelineName}  ${c.done}/${c.total} done, ${c.failed} failed  ${new Date(r.createdAt).toISOString()}${r.trigger === 'schedule' ? '  (scheduled)' : ''}${note}`,
            );
          }
          if (held)
            print(`search queue paused for the API key: ${paused?.code}: ${paused?.reason}`);
          return;
        }
        const report = store.runStatus(runId);
        if (!report)
          throw new HarvestError('RUN_NOT_FOUND', `no run ${runId} in ${settings.dbPath}`, {
            exitCode: EXIT.BAD_INPUT,
          });
        const queue = await queueState(settings, report.run.id);
        if (queue.feed) {
          queue.feed.notFed = store.tasks.countUnfinishedAfter(report.run.id, queue.feed.after);
        }
        if (opts.json) {
          const json = {
            ...report,
            queuePaused: queue.paused ?? null,
            waitingRecords: queue.waiting ?? null,
            feed: queue.feed
              ? { notFed: queue.feed.notFed, feeder: queue.feed.feeder ?? null }
              : null,
            workers: queue.workers ?? null,
          };
          return print(JSON.stringify(json, null, 2));
        }
        print(formatReport(report, queue));
      } finally {
        store.close();
      }
    });
}

function print(text: string): void {
  process.stdout.write(`${text}\n`);
}

/** What Redis says beside SQLite: the queue's pause, and records waiting for the database. */
interface QueueState {
  paused: { code: string; reason: string } | undefined;
  waiting: WaitingRecords | undefined;
  /**
   * A run larger than the queue window, while SQLite still holds tasks Redis has not been given
   * (src/run/feed/feeder.ts): the key fed through, the process feeding (none: nobody is), and how
   * many unfinished tasks wait after that key.
   */
  feed?: { after: string; feeder: string | undefined; notFed?: number };
  /** Set when Redis did not answer: why (its address masked). */
  unreachable?: string;
  /** Live pools on the prefix with the search and the store role (read for one run only). */
  workers?: { search: number; store: number };
}

/**
 * Reads the queue state; when Redis does not answer (within 1.5 s), one note says so and the
 * parts it would give stay undefined.
 */
async function queueState(settings: Settings, runId?: string): Promise<QueueState> {
  try {
    await assertRedisReachable(settings.redisUrl, 1500);
  } catch {
    const unreachable = `Redis at ${maskUrl(settings.redisUrl)} is not reachable: pauses and records waiting for the database are not shown`;
    process.stderr.write(`note: ${unreachable}\n`);
    return { paused: undefined, waiting: undefined, unreachable };
  }
  const redis = createRedis(settings.redisUrl, 'client');
  // Read even when the queues are quiet: a window nobody refills is a quiet queue.
  const feed = runId ? await feedOf(redis, settings, runId).catch(() => undefined) : undefined;
  const workers = runId ? await workersOf(redis, settings).catch(() => undefined) : undefined;
  const extra = { ...withFeed(feed), ...(workers ? { workers } : {}) };
  if (await queuesQuiet(redis, settings.queuePrefix).catch(() => false)) {
    redis.disconnect();
    return { paused: undefined, waiting: { jobs: 0, events: 0, failedJobs: 0 }, ...extra };
  }
  // Something is paused or waiting: BullMQ reads it exactly.
  const [{ Queue }, { pausedReason }, { waitingRecords }] = await Promise.all([
    import('bullmq'),
    import('../../run/runtime.ts'),
    import('../../queue/store-queue.ts'),
  ]);
  const connection = { connection: redis, prefix: settings.queuePrefix };
  const searchQueue = new Queue(QUEUES.search, connection);
  const storeQueue = new Queue(QUEUES.store, connection);
  // Were Redis to go away now, the reads below fail on their own: no line per reconnection.
  searchQueue.on('error', () => {});
  storeQueue.on('error', () => {});
  try {
    return {
      paused: await pausedReason({ redis, searchQueue, keys: harvestKeys(settings.queuePrefix) }),
      waiting: await waitingRecords(storeQueue),
      ...extra,
    };
  } catch {
    return { paused: undefined, waiting: undefined, ...extra };
  } finally {
    await searchQueue.close().catch(() => {});
    await storeQueue.close().catch(() => {});
    redis.disconnect();
  }
}

type Feed = NonNullable<QueueState['feed']>;

/** The run's feed entry and the feeder lease's holder; undefined when the run is not fed. */
async function feedOf(redis: Redis, settings: Settings, runId: string): Promise<Feed | undefined> {
  const { FeedState } = await import('../../run/feed/state.ts');
  const state = new FeedState(redis, harvestKeys(settings.queuePrefix));
  const entry = await state.get(runId);
  if (!entry) return undefined;
  return { after: entry.after, feeder: (await state.holder()) ?? undefined };
}

/** How many live pools (heartbeats) on the prefix search, and store records. */
async function workersOf(redis: Redis, settings: Settings): Promise<QueueState['workers']> {
  const keys = harvestKeys(settings.queuePrefix);
  const [search, store] = await Promise.all([
    liveWorkersWithRole(redis, keys, 'search'),
    liveWorkersWithRole(redis, keys, 'store'),
  ]);
  return { search, store };
}

const withFeed = (feed: Feed | undefined) => (feed ? { feed } : {});

function formatNotification(n: NotificationRow): string {
  const tries = `${n.attempts} attempt${n.attempts === 1 ? '' : 's'}`;
  if (n.state === 'delivered') return `delivered to ${n.url} (${tries})`;
  if (n.state === 'failed') return `FAILED to ${n.url} after ${tries}: ${n.lastError ?? ''}`;
  return n.attempts === 0
    ? `${n.url}, once the run has finished`
    : `${n.url}: retrying (${tries}; last: ${n.lastError ?? ''})`;
}

/** Pause codes that belong to the API key rather than to one run. */
const KEY_CODES = new Set(['UNAUTHORIZED', 'PAYMENT_REQUIRED']);

export function formatReport(r: RunStatusReport, queue: QueueState, nowMs = Date.now()): string {
  const t = r.tasks;
  const lines = [
    `run ${r.run.id} (${r.run.pipelineName}): ${r.run.status}`,
    `  tasks    ${t.total}: done ${t.done}, failed ${t.failed}, retrying ${t.retrying}, queued ${t.queued}, running ${t.running}`,
  ];
  const failed = Object.entries(r.errors.failedTasksByCode);
  if (failed.length > 0) {
    lines.push(`  failed   ${failed.map(([code, n]) => `${code} ${n}`).join(', ')}`);
  }
  lines.push(
    `  calls    ${r.calls.calls}, credits used ${r.calls.creditsUsed}${r.run.maxCredits === null ? '' : ` of ${r.run.maxCredits}`}${r.calls.unknownCostCalls ? ` (+${r.calls.unknownCostCalls} calls of unknown cost)` : ''}`,
    `  results  ${r.results}, ${r.newUrls} new to the pipeline (URLs it saw first in this run)`,
    ...(r.media ? [`  media    ${formatMediaSummary(r.media, nowMs)}`] : []),
  );
  if (r.notification) lines.push(`  notify   ${formatNotification(r.notification)}`);
  const byCode = Object.entries(r.errors.callsByCode);
  if (byCode.length > 0) {
    lines.push(`  errors   ${byCode.map(([code, n]) => `${code} ${n}`).join(', ')}`);
  }
  for (const e of r.errors.recent) {
    lines.push(
      `    ${e.outcome}${e.status ? ` ${e.status}` : ''} on ${e.taskKey} (attempt ${e.attempt}): ${e.errorMessage ?? ''}`,
    );
  }
  if (queue.waiting && queue.waiting.jobs > 0) {
    const events = queue.waiting.events === null ? '' : ` (${queue.waiting.events} records)`;
    const stuck =
      queue.waiting.failedJobs > 0
        ? `, ${queue.waiting.failedJobs} failed for good (retried when a store worker starts or a run resumes)`
        : '';
    lines.push(
      `  waiting  ${queue.waiting.jobs} batches of records for the database${events}${stuck}`,
    );
  }
  const unfinished = !FINISHED_RUN_STATUSES.includes(r.run.status);
  if (unfinished && queue.feed && (queue.feed.notFed ?? 1) > 0) {
    const notFed = queue.feed.notFed === undefined ? 'tasks' : `${queue.feed.notFed} tasks`;
    lines.push(
      queue.feed.feeder
        ? `  window   ${notFed} wait in SQLite for the queue window; ${queue.feed.feeder} feeds them`
        : `  window   ${notFed} wait in SQLite for the queue window, and no store worker feeds them: start \`harvest worker\` on the database host`,
    );
  }
  const workers = queue.workers;
  if (unfinished && workers && t.queued + t.retrying + t.running > 0) {
    const missing = [
      ...(workers.search === 0 ? ['search'] : []),
      ...(workers.store === 0 ? ['store'] : []),
    ];
    if (missing.length > 0) {
      const where = workers.store === 0 ? ' on the database host' : '';
      lines.push(
        `  workers  none live with the ${missing.join(' or the ')} role: its tasks wait; start \`harvest worker\`${where}`,
      );
    }
  }
  const reason =
    (unfinished ? queue.paused : undefined) ??
    (r.run.pausedReason ? { code: 'PAUSED', reason: r.run.pausedReason } : undefined);
  if (reason) {
    const whose = KEY_CODES.has(reason.code) ? ' (the API key: every unfinished run waits)' : '';
    lines.push(`  PAUSED   ${reason.code}${whose}: ${reason.reason}`);
    lines.push(`  resume   harvest run --resume ${r.run.id} --wait`);
  } else if (r.run.status === 'interrupted' || r.run.status === 'cancelled') {
    lines.push(`  resume   harvest run --resume ${r.run.id} --wait`);
  }
  return lines.join('\n');
}
