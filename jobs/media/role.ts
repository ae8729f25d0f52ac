/**
 * The `media` role: downloads the files behind results' signed URLs before they expire, on the
 * host that owns the database (media rows live there). It has its own queue and concurrency,
 * so a backlog of searches, or the search queue paused by a 429, never holds it up.
 *
 * On start it removes the partial files of downloads that died with their worker and sends
 * every pending row to the queue again (rows without a job: a process died between storing
 * results and queueing them, or Redis lost the jobs); then it queues new rows as results
 * arrive (jobs/media/enqueue.ts), earliest deadline first.
 */
import { type Job, Queue, Worker } from 'bullmq';
import type { MediaSettings } from '../../src/config.ts';
import { endingsForRefused, type MediaEvent } from '../../src/events/media.ts';
import type { StoreEvent } from '../../src/events/store.ts';
import type { Logger } from '../../src/log.ts';
import { createGuardedAgent, type Resolve } from '../../src/media/agent.ts';
import { createDownloader } from '../../src/media/download.ts';
import { DownloadSlots } from '../../src/media/slots.ts';
import { mediaRoot, removeOrphanPartials } from '../../src/media/storage.ts';
import { QUEUES } from '../../src/queue/names.ts';
import { backoffStrategy } from '../../src/queue/retry.ts';
import { directWriter, type EventWriter } from '../../src/store/index.ts';
import type { RoleContext, RoleHandle } from '../role.ts';
import { SLOTS_PER_WORKER, splitConcurrency } from '../search/role.ts';
import { StoreSink } from '../store/sink.ts';
import { MEDIA_JOB_ATTEMPTS, MediaEnqueuer } from './enqueue.ts';
import { PriorityAnchor } from './priority.ts';
import { createMediaProcessor, mediaIdsOf } from './processor.ts';
import { Reissuer } from './reissue.ts';

export interface MediaRoleOptions {
  settings: MediaSettings;
  /** The data directory: media folders are inside it. */
  dataDir: string;
  /** The API's base address: its host is exempt from the address rule (the sandbox, say). */
  apiUrl: string;
  /** Resolver of media host names. Default the system resolver. */
  resolve?: Resolve;
  /** How often new media rows are looked for, in ms. Default 50. */
  pollMs?: number;
  /** How long a media job's lock lives without renewal, in ms. Default 30000. */
  lockDurationMs?: number;
  /** How often stalled media jobs are looked for, in ms. Default 15000. */
  stalledIntervalMs?: number;
  /** How often partial files of dead workers are removed while the role runs, in ms. Default 60000. */
  partialSweepMs?: number;
}

/** Partial files untouched this long are removed whoever wrote them, in ms (1 hour). */
const PARTIAL_MAX_IDLE_MS = 3_600_000;
/** How often partial files of dead workers are looked for while the role runs, in ms. */
const PARTIAL_SWEEP_MS = 60_000;
/**
 * Longest a media row's move (saved, failed, retried, a fresh URL) waits for others before it
 * is committed, in ms, when no commit is under way; marks of rows queued do not wait (the
 * enqueuer's next look waits for them). A saved row's file is durable before it waits: a crash
 * meanwhile costs a download again, never a file. Each commit writes every page it touched to
 * the WAL and fsyncs it, so its cost is mostly per commit, not per row: at 2 ms a commit
 * carried 4-8 saved rows, at 25 ms about 25, and the writer thread's CPU per file saved fell
 * from 0.12-0.16 to 0.08-0.09 ms (media benchmark, perf).
 */
export const MEDIA_COMMIT_DELAY_MS = 25;
/** How often media urgency is checked, in ms. */
export const URGENCY_CHECK_MS = 100;
/**
 * Media jobs in hand per download slot. A row holds a slot only while it transfers
 * (src/media/slots.ts); the others make their files durable, commit their rows, or wait at
 * hand for the next free slot, so no slot waits on the disk or on a fetch from Redis. A job
 * names up to MEDIA_ROWS_PER_JOB rows, but may name one: the slots are filled either way.
 */
export const MEDIA_JOBS_PER_SLOT = 3;

/**
 * Holds the pool's search gate (search-gate.ts) while media due within `urgentMs` waits, in the
 * media queue or in this process for a download slot, and releases it once none does.
 */
function watchUrgency(ctx: RoleContext, queue: Queue, slots: DownloadSlots, urgentMs: number) {
  const store = ctx.store!;
  let checking: Promise<void> | undefined;
  const check = async () => {
    const due = store.media.nextDeadline();
    let urgent = urgentMs > 0 && due !== null && due - Date.now() < urgentMs;
    // Jobs taken from the queue may still wait here for a slot (jobs in hand outnumber slots).
    if (urgent && slots.waiting === 0) {
      const counts = await queue.getJobCounts('waiting', 'prioritized');
      urgent = (counts.waiting ?? 0) + (counts.prioritized ?? 0) > 0;
    }
    ctx.searchGate.set(urgent);
  };
  const timer = setInterval(() => {
    checking ??= check()
      .catch((error: unknown) => ctx.log.warn({ err: error }, 'media urgency check failed'))
      .finally(() => {
        checking = undefined;
      });
  }, URGENCY_CHECK_MS);
  return {
    async stop() {
      clearInterval(timer);
      await checking;
      ctx.searchGate.set(false);
    },
  };
}

/**
 * Commits the media role's events (re-issues' calls and results among them). Events the
 * database refuses (a bug of harvest's) are logged, and the media rows they name end `failed`
 * with the reason (events/media.ts `endingsForRefused`) rather than stay pending for good.
 */
export async function recordMediaEvents(
  writer: EventWriter,
  events: StoreEvent[],
  log: Logger,
): Promise<void> {
  const refused = await writer.write(events);
  if (refused.length === 0) return;
  log.error({ rejected: refused }, 'media events refused by the database');
  const endings = endingsForRefused(events, refused, Date.now());
  if (endings.length === 0) return;
  const again = await writer.write(endings);
  if (again.length > 0) {
    log.error({ rejected: again }, 'could not end the media rows of refused events');
  }
}

export async function startMediaRole(
  ctx: RoleContext,
  options: MediaRoleOptions | undefined,
): Promise<RoleHandle> {
  const { store, log } = ctx;
  if (!store) throw new Error('the media role needs the database');
  if (!options) throw new Error('the media role needs its settings');
  const { settings, dataDir } = options;
  const queue = new Queue(QUEUES.media, { connection: ctx.connection, prefix: ctx.prefix });
  queue.on('error', () => {}); // Redis going away is said once (src/cli/redis-watch.ts)

  const alive = async (owner: string) =>
    owner === ctx.workerId || (await ctx.redis.exists(ctx.keys.workerHeartbeat(owner))) === 1;
  const sweepPartials = async () => {
    for (const dir of store.media.dirs()) {
      const removed = await removeOrphanPartials(
        mediaRoot(dataDir, dir),
        alive,
        PARTIAL_MAX_IDLE_MS,
        Date.now(),
      );
      if (removed > 0) log.info({ dir, removed }, 'removed partial files of interrupted downloads');
    }
  };
  await sweepPartials();
  // Again while it runs: a worker restarted at once after a crash finds the dead one's heartbeat
  // still alive, and its partial files (up to maxBytes each) would stay until the next start.
  let sweeping: Promise<void> | undefined;
  const sweeper = setInterval(() => {
    sweeping ??= sweepPartials()
      .catch((error: unknown) => log.warn({ err: error }, 'removing partial files failed'))
      .finally(() => {
        sweeping = undefined;
      });
  }, options.partialSweepMs ?? PARTIAL_SWEEP_MS);
  sweeper.unref();
  const requeued = store.media.unqueuePending();
  if (requeued > 0) log.info({ media: requeued }, 'pending media queued again');

  // Rows move through the database's one writer (a thread when the pool also searches), in
  // group commits: concurrent downloads share a transaction, and SQLite stays off this thread.
  // One write at a time: rows saved while a commit waits for the disk go in the next one, not
  // each in a commit (and an fsync) of its own queued behind it. Rows wait up to
  // MEDIA_COMMIT_DELAY_MS for company when no commit is under way (see there).
  const writer = ctx.writer ?? directWriter(store);
  const sink = new StoreSink((events) => recordMediaEvents(writer, events, log), {
    maxInFlight: 1,
    maxDelayMs: MEDIA_COMMIT_DELAY_MS,
  });
  const write = (events: MediaEvent[]) => sink.push(events);
  if (!ctx.client) log.warn('no API key here: media whose URL expires cannot be re-issued');

  const agent = createGuardedAgent({
    allowedHosts: [new URL(options.apiUrl).hostname, ...settings.allowHosts],
    connectTimeoutMs: settings.timeoutMs,
    // One per download in flight: media often comes from one host, and a download waiting for
    // a connection is a slot doing nothing (16, the agent's default, held 32 slots to 16).
    connections: settings.concurrency,
    ...(options.resolve ? { resolve: options.resolve } : {}),
  });
  // HARVEST_MEDIA_CONCURRENCY bounds transfers in flight; jobs in hand are more (see above).
  const downloadSlots = new DownloadSlots(settings.concurrency);
  const processor = createMediaProcessor({
    store,
    write,
    downloader: createDownloader({
      agent,
      timeoutMs: settings.timeoutMs,
      maxRedirects: settings.maxRedirects,
      slots: downloadSlots,
    }),
    reissuer: new Reissuer({
      store,
      client: ctx.client,
      record: ctx.record,
      write,
      budget: ctx.budget,
      inflight: ctx.inflight,
      // Re-issues are search calls: they count against the limit every search worker shares.
      rate: ctx.rate,
      workerId: ctx.workerId,
      maxReissues: settings.maxReissues,
      stopReason: (runId) => ctx.stoppedRuns.reason(runId),
      log,
    }),
    dataDir,
    settings,
    owner: ctx.workerId,
    logger: log,
  });
  // Slices of SLOTS_PER_WORKER, as in the search role: a BullMQ worker starts no job before all
  // its slots are fetched, one round trip each.
  const jobsInHand = settings.concurrency * MEDIA_JOBS_PER_SLOT;
  const workers = splitConcurrency(jobsInHand, SLOTS_PER_WORKER).map(
    (slots) =>
      new Worker(QUEUES.media, processor, {
        connection: ctx.connection,
        prefix: ctx.prefix,
        concurrency: slots,
        lockDuration: options.lockDurationMs ?? 30_000,
        stalledInterval: options.stalledIntervalMs ?? 15_000,
        // A worker killed mid-download is not the download's fault.
        maxStalledCount: 100,
        settings: { backoffStrategy },
      }),
  );
  const onFailed = (job: Job | undefined, error: Error) => {
    if (!job || job.attemptsMade < (job.opts.attempts ?? MEDIA_JOB_ATTEMPTS)) return;
    // Out of attempts outside a download (a bug, a database that stayed locked): the rows say
    // so (those still pending: the event moves no other).
    let mediaIds: number[];
    try {
      mediaIds = mediaIdsOf(job);
    } catch {
      return; // names no row
    }
    const at = Date.now();
    const ended = mediaIds.map(
      (mediaId): MediaEvent => ({
        type: 'media-ended',
        mediaId,
        status: 'failed',
        code: 'MEDIA_WORKER_ERROR',
        message: error.message,
        attempted: false,
        at,
      }),
    );
    write(ended).catch((e: unknown) =>
      log.error({ err: e, mediaIds }, 'could not record a media job that failed for good'),
    );
  };
  for (const worker of workers) {
    worker.on('error', (error) => log.error({ err: error }, 'media worker error'));
    worker.on('failed', onFailed);
  }

  const enqueuer = new MediaEnqueuer({
    queue,
    table: {
      unqueued: (limit) => store.media.unqueued(limit),
      // Through the writer, like every other move of a row: this thread never waits for a
      // commit's fsync (tens of ms, all downloads of the process held meanwhile). Not through
      // the sink: a batch of marks is a commit's worth already, and it is waited for.
      markQueued: (ids, at) =>
        recordMediaEvents(writer, [{ type: 'media-queued', mediaIds: [...ids], at }], log),
    },
    anchor: new PriorityAnchor(ctx.redis, ctx.keys.mediaPriorityAnchor, queue),
    log,
    ...(options.pollMs === undefined ? {} : { pollMs: options.pollMs }),
  });
  enqueuer.start();
  const urgency = watchUrgency(ctx, queue, downloadSlots, settings.urgentMs);

  return {
    async close() {
      clearInterval(sweeper);
      await sweeping;
      await urgency.stop();
      await enqueuer.stop();
      await Promise.all(workers.map((w) => w.close()));
      await sink.drain();
      await queue.close();
      await agent.close();
    },
  };
}
