/**
 * `harvest status`: runs and their counts, credits, errors by code, and why a run is paused.
 *
 * Over 300 lines: what Redis says beside SQLite (pause, records waiting, feed, workers, calls
 * in flight) is read and worded here, next to the one report it completes.
 */
import type { Command } from 'commander';
import type { Redis } from 'ioredis';
import { describeOutage } from '../../api/outage.ts';
import { maskUrl, type Settings } from '../../config.ts';
import { HarvestError } from '../../errors.ts';
import { statIfExists } from '../../files.ts';
import { maskUrlSecrets } from '../../log.ts';
import { type CircuitState, OUTAGE_CODE, readCircuit } from '../../queue/circuit.ts';
import { assertRedisReachable, createRedis } from '../../queue/connection.ts';
import { liveCallsOfRun, liveWorkersWithRole } from '../../queue/inflight.ts';
import { type MediaPause, mediaPauseOf } from '../../queue/media-pause.ts';
import { harvestKeys, QUEUES } from '../../queue/names.ts';
import type { RateHold } from '../../queue/rate/hold.ts';
import { formatRateHold, rateHoldsInForce } from '../../queue/rate/holds.ts';
import type { WaitingRecords } from '../../queue/store-queue.ts';
import { keyPauseWords } from '../../run/key-pause-codes.ts';
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
import { sayReadOnlyFolder } from '../read-only-notice.ts';
import { terminalText } from '../terminal-text.ts';

/**
 * True when nothing is at `file` yet. A path that cannot be looked at (its folder is a file,
 * no permission) is not "no runs yet": opening it says what is wrong, as every command does.
 */
function noDatabaseYet(file: string): boolean {
  try {
    return statIfExists(file) === undefined;
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
      const store = openStore(settings.dbPath, {
        readonly: true,
        onReadOnlyFolder: sayReadOnlyFolder,
      });
      try {
        if (!runId) {
          const runs = store.runs.list({ limit: opts.limit });
          if (opts.json) return print(JSON.stringify(runs, null, 2));
          if (runs.length === 0) return print(`no runs yet in ${settings.dbPath}`);
          const { paused, holds, apiOutage, mediaPaused } = await queueState(settings);
          const words = paused && keyPauseWords(paused.code);
          const held = words ? ` (paused: ${words.label})` : '';
          for (const r of runs) {
            const c = store.tasks.counts(r.id);
            const note = FINISHED_RUN_STATUSES.includes(r.status) ? '' : held;
            print(
              `${r.id}  ${r.status.padEnd(11)} ${terminalText(r.pipelineName)}  ${c.done}/${c.total} done, ${c.failed} failed  ${new Date(r.createdAt).toISOString()}${r.trigger === 'schedule' ? '  (scheduled)' : ''}${note}`,
            );
          }
          if (paused && words) {
            const why = `${words.label} (${words.status} ${paused.code}): ${paused.reason}`;
            print(`search queue paused: ${terminalText(why)}`);
          }
          if (apiOutage) print(terminalText(describeOutage(apiOutage, Date.now())));
          if (mediaPaused) print(terminalText(mediaPauseText(mediaPaused)));
          for (const hold of holds ?? []) {
            print(`rate limit holds ${terminalText(formatRateHold(hold, Date.now()))}`);
          }
          return;
        }
        const notFound = () =>
          new HarvestError('RUN_NOT_FOUND', `no run ${runId} in ${settings.dbPath}`, {
            exitCode: EXIT.BAD_INPUT,
          });
        if (!store.runs.get(runId)) throw notFound();
        const queue = await queueState(settings, runId);
        const report = store.runStatus(runId, { inFlightTaskKeys: queue.inFlight?.taskKeys });
        if (!report) throw notFound();
        if (queue.feed) {
          queue.feed.notFed = store.tasks.countUnfinishedAfter(report.run.id, queue.feed.after);
        }
        if (opts.json) {
          const json = {
            ...report,
            notification: report.notification && {
              ...report.notification,
              url: maskUrlSecrets(report.notification.url),
            },
            queuePaused: queue.paused ?? null,
            waitingRecords: queue.waiting ?? null,
            feed: queue.feed
              ? { notFed: queue.feed.notFed, feeder: queue.feed.feeder ?? null }
              : null,
            workers: queue.workers ?? null,
            callsInFlight: queue.inFlight?.calls ?? null,
            apiOutage: queue.apiOutage ?? null,
            rateHolds: queue.holds ?? null,
            mediaQueuePaused: queue.mediaPaused ?? null,
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

/** The media queue's pause (a full disk), and what ends it. */
function mediaPauseText(pause: MediaPause): string {
  const since = pause.at > 0 ? ` since ${new Date(pause.at).toISOString()}` : '';
  return `media queue paused${since}: ${pause.code}: ${pause.reason}; free space, then \`harvest media retry\``;
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
  /**
   * The run's calls in flight on live workers (the in-flight journal), and the tasks they
   * search: SQLite shows those tasks queued until their records arrive (read for one run only).
   */
  inFlight?: { calls: number; taskKeys: string[] };
  /** Rate-limit holds in force: API keys whose calls wait, runs whose own limit is spent. */
  holds?: RateHold[];
  /** While the API is unreachable (src/queue/circuit.ts): since when, the next probe, the last error. */
  apiOutage?: CircuitState;
  /** Why the media queue is paused (a full disk; src/queue/media-pause.ts). */
  mediaPaused?: MediaPause;
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
  const inFlight = runId
    ? await inFlightOf(redis, settings, runId).catch(() => undefined)
    : undefined;
  // One run: the API keys' holds, and its own limit's (not other runs').
  const holds = (
    await rateHoldsInForce(redis, harvestKeys(settings.queuePrefix)).catch(() => undefined)
  )?.filter((hold) => !runId || !hold.whose.startsWith('run ') || hold.whose === `run ${runId}`);
  const apiOutage = await readCircuit(redis, harvestKeys(settings.queuePrefix)).catch(
    () => undefined,
  );
  const mediaPaused = await mediaPauseOf(redis, harvestKeys(settings.queuePrefix)).catch(
    () => undefined,
  );
  const extra = {
    ...(mediaPaused ? { mediaPaused } : {}),
    ...(apiOutage ? { apiOutage } : {}),
    ...(holds ? { holds } : {}),
    ...withFeed(feed),
    ...(workers ? { workers } : {}),
    ...(inFlight ? { inFlight } : {}),
  };
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

/** The run's calls in flight on live workers, and the tasks whose searches they are. */
async function inFlightOf(
  redis: Redis,
  settings: Settings,
  runId: string,
): Promise<QueueState['inFlight']> {
  const calls = await liveCallsOfRun(redis, harvestKeys(settings.queuePrefix), runId);
  const searches = calls.filter((c) => !c.purpose || c.purpose === 'search');
  return { calls: calls.length, taskKeys: searches.map((c) => c.taskKey) };
}

const withFeed = (feed: Feed | undefined) => (feed ? { feed } : {});

function formatNotification(n: NotificationRow): string {
  const tries = `${n.attempts} attempt${n.attempts === 1 ? '' : 's'}`;
  const url = maskUrlSecrets(n.url); // its query and credentials may be the receiver's secret
  if (n.state === 'delivered') return `delivered to ${url} (${tries})`;
  if (n.state === 'failed') return `FAILED to ${url} after ${tries}: ${n.lastError ?? ''}`;
  return n.attempts === 0
    ? `${url}, once the run has finished`
    : `${url}: retrying (${tries}; last: ${n.lastError ?? ''})`;
}

export function formatReport(r: RunStatusReport, queue: QueueState, nowMs = Date.now()): string {
  const t = r.tasks;
  const inFlight = queue.inFlight?.calls ? `, ${queue.inFlight.calls} in flight` : '';
  const lines = [
    `run ${r.run.id} (${r.run.pipelineName}): ${r.run.status}`,
    `  tasks    ${t.total}: done ${t.done}, failed ${t.failed}, retrying ${t.retrying}, queued ${t.queued}, running ${t.running}`,
  ];
  const failed = Object.entries(r.errors.failedTasksByCode);
  if (failed.length > 0) {
    lines.push(`  failed   ${failed.map(([code, n]) => `${code} ${n}`).join(', ')}`);
  }
  lines.push(
    `  calls    ${r.calls.calls}, credits used ${r.calls.creditsUsed}${r.run.maxCredits === null ? '' : ` of ${r.run.maxCredits}`}${r.calls.unknownCostCalls ? ` (+${r.calls.unknownCostCalls} calls of unknown cost)` : ''}${inFlight}`,
    `  results  ${r.results}, ${r.newUrls} new to the pipeline (URLs it saw first in this run)`,
    ...(r.media ? [`  media    ${formatMediaSummary(r.media, nowMs)}`] : []),
    ...prunedLines(r),
    ...anomalyLines(r),
  );
  if (r.notification) lines.push(`  notify   ${formatNotification(r.notification)}`);
  lines.push(
    ...errorLines(r),
    ...waitingLines(queue),
    ...holdLines(queue, nowMs),
    ...(queue.apiOutage ? [`  outage   ${describeOutage(queue.apiOutage, nowMs)}`] : []),
    ...(queue.mediaPaused ? [`  media    ${mediaPauseText(queue.mediaPaused)}`] : []),
    ...nextStepLines(r, queue),
  );
  // Messages of the API and of webhook receivers, reasons read from Redis: one line each, and
  // never a terminal's control sequence.
  return lines.map(terminalText).join('\n');
}

/** What `harvest prune` removed of the run: the lines above count the rows left. */
function prunedLines(r: RunStatusReport): string[] {
  if (!r.pruned) return [];
  const p = r.pruned;
  const unknown = p.unknownCostCalls ? ` (+${p.unknownCostCalls} of unknown cost)` : '';
  return [
    `  pruned   ${p.calls} calls (credits used ${p.creditsUsed}${unknown}) and ${p.results} results ` +
      'removed by `harvest prune`; cost reports still count them',
  ];
}

/** Calls answered with an implausible `creditsUsed`: stored as billed, counted at their bound. */
function anomalyLines(r: RunStatusReport): string[] {
  const a = r.creditAnomalies;
  if (a.calls === 0) return [];
  const calls = `${a.calls} call${a.calls === 1 ? '' : 's'}`;
  return [
    `  anomaly  ${calls} billed implausible credits (${a.creditsUsed} in all, kept as billed; ` +
      `the budget counts ${a.creditsCounted}, what their requests can cost at most): ` +
      '`harvest report costs --by outcome` lists them; ask the service about the bill',
  ];
}

function errorLines(r: RunStatusReport): string[] {
  const lines: string[] = [];
  const byCode = Object.entries(r.errors.callsByCode);
  if (byCode.length > 0) {
    lines.push(`  errors   ${byCode.map(([code, n]) => `${code} ${n}`).join(', ')}`);
  }
  for (const e of r.errors.recent) {
    lines.push(
      `    ${e.outcome}${e.status ? ` ${e.status}` : ''} on ${e.taskKey} (attempt ${e.attempt}): ${e.errorMessage ?? ''}`,
    );
  }
  return lines;
}

/** Every rate-limit hold in force: whose calls wait, why, until when. */
function holdLines(queue: QueueState, nowMs: number): string[] {
  return (queue.holds ?? []).map((hold) => `  held     ${formatRateHold(hold, nowMs)}`);
}

function waitingLines(queue: QueueState): string[] {
  if (!queue.waiting || queue.waiting.jobs === 0) return [];
  const events = queue.waiting.events === null ? '' : ` (${queue.waiting.events} records)`;
  const stuck =
    queue.waiting.failedJobs > 0
      ? `, ${queue.waiting.failedJobs} failed for good (retried when a store worker starts or a run resumes)`
      : '';
  return [`  waiting  ${queue.waiting.jobs} batches of records for the database${events}${stuck}`];
}

/**
 * What holds the run and what to do next. A queued or running run waits for workers (start
 * `harvest worker`); one paused for the API key or its credits, interrupted or cancelled has
 * no job a worker would take: only `harvest run --resume` brings it back.
 */
function nextStepLines(r: RunStatusReport, queue: QueueState): string[] {
  const lines: string[] = [];
  const unfinished = !FINISHED_RUN_STATUSES.includes(r.run.status);
  const stopped = r.run.status === 'interrupted' || r.run.status === 'cancelled';
  // An unreachable API's pause ends by itself once a probe is answered (the API line says so).
  const queuePause = queue.paused?.code === OUTAGE_CODE ? undefined : queue.paused;
  const reason =
    (unfinished ? queuePause : undefined) ??
    (r.run.pausedReason ? { code: 'PAUSED', reason: r.run.pausedReason } : undefined);
  const goesOn = unfinished && !stopped;
  if (goesOn && queue.feed && (queue.feed.notFed ?? 1) > 0) {
    const notFed = queue.feed.notFed === undefined ? 'tasks' : `${queue.feed.notFed} tasks`;
    lines.push(
      queue.feed.feeder
        ? `  window   ${notFed} wait in SQLite for the queue window; ${queue.feed.feeder} feeds them`
        : `  window   ${notFed} wait in SQLite for the queue window, and no store worker feeds them: start \`harvest worker\` on the database host`,
    );
  }
  const missing = goesOn && !reason ? missingRoles(r, queue.workers) : [];
  if (missing.length > 0) {
    const where = missing.includes('store') ? ' on the database host' : '';
    lines.push(
      `  workers  none live with the ${missing.join(' or the ')} role: its tasks wait; start \`harvest worker\`${where}`,
    );
  }
  if (reason) {
    const words = keyPauseWords(reason.code);
    const whose = words ? ` (${words.label}: every unfinished run waits)` : '';
    lines.push(`  PAUSED   ${reason.code}${whose}: ${reason.reason}`);
  }
  if (reason || stopped) lines.push(resumeLine(r.run.id, queue.workers));
  return lines;
}

/** The roles no live worker has, of those the run's unfinished tasks need. */
function missingRoles(r: RunStatusReport, workers: QueueState['workers']): string[] {
  const t = r.tasks;
  if (!workers || t.queued + t.retrying + t.running === 0) return [];
  return [...(workers.search === 0 ? ['search'] : []), ...(workers.store === 0 ? ['store'] : [])];
}

/**
 * How to resume: `--wait` leaves the run to the live workers; with none (or when Redis did not
 * say), `--local` works it in the command itself.
 */
function resumeLine(runId: string, workers: QueueState['workers']): string {
  return workers && workers.search > 0 && workers.store > 0
    ? `  resume   harvest run --resume ${runId} --wait`
    : `  resume   harvest run --resume ${runId} --local (or --wait, once \`harvest worker\` runs)`;
}
