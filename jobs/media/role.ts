/**
 * The `media` role: downloads the files behind results' signed URLs before they expire, on the
 * host that owns the database (media rows live there). It has its own queue and concurrency,
 * so a backlog of searches, or the search queue paused by a 429, never holds it up.
 *
 * It wires the media queue's processor (jobs/media/processor.ts) to BullMQ workers, and starts
 * beside them the sweeper of partial files (./sweeper.ts), the enqueuer that queues pending rows
 * earliest deadline first (./enqueue.ts) and the urgency watch that holds searches back
 * (./urgency.ts). On start it sends every pending row to the queue again: rows without a job
 * (a process died between storing results and queueing them, or Redis lost the jobs).
 */
import { type Job, type Processor, Queue, Worker } from 'bullmq';
import type { MediaSettings } from '../../src/config.ts';
import { endingsForRefused, type MediaEvent } from '../../src/events/media.ts';
import type { StoreEvent } from '../../src/events/store.ts';
import type { Logger } from '../../src/log.ts';
import { originEntry } from '../../src/media/address.ts';
import { createGuardedAgent, type Resolve } from '../../src/media/agent.ts';
import { createDownloader } from '../../src/media/download.ts';
import { DownloadSlots } from '../../src/media/slots.ts';
import { pauseMediaQueue } from '../../src/queue/media-pause.ts';
import { QUEUES } from '../../src/queue/names.ts';
import { backoffStrategy } from '../../src/queue/retry.ts';
import {
  directWriter,
  type EventWriter,
  type Store,
  type WriteOptions,
} from '../../src/store/index.ts';
import { awaitable } from '../records.ts';
import type { RoleContext, RoleHandle } from '../role.ts';
import { SLOTS_PER_WORKER, splitConcurrency } from '../search/role.ts';
import { MEDIA_JOB_ATTEMPTS, MediaEnqueuer } from './enqueue.ts';
import { PriorityAnchor } from './priority.ts';
import { createMediaProcessor, mediaIdsOf } from './processor.ts';
import { Reissuer } from './reissue.ts';
import { startPartialSweeper, workerAlive } from './sweeper.ts';
import { watchMediaUrgency } from './urgency.ts';

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

/**
 * Longest a media row's move (saved, failed, retried, a fresh URL) waits for others before it
 * is committed, in ms, when no commit is under way; marks of rows queued do not wait (the
 * enqueuer's next look waits for them). A commit's cost (its WAL pages and fsync) is mostly per
 * commit, not per row, so rows saved together share one. A saved row's file is durable before
 * it waits: a crash meanwhile costs a download again, never a file.
 */
export const MEDIA_COMMIT_DELAY_MS = 25;
/**
 * Media jobs in hand per download slot. A row holds a slot only while it transfers
 * (src/media/slots.ts); the others make their files durable, commit their rows, or wait at
 * hand for the next free slot, so no slot waits on the disk or on a fetch from Redis. A job
 * names up to MEDIA_ROWS_PER_JOB rows, but may name one: the slots are filled either way.
 */
export const MEDIA_JOBS_PER_SLOT = 3;

/**
 * Commits the media role's events (re-issues' calls and results among them). Events the
 * database refuses (a bug of harvest's) are logged, and the media rows they name end `failed`
 * with the reason (src/events/media.ts `endingsForRefused`) rather than stay pending for good.
 */
export async function recordMediaEvents(
  writer: EventWriter,
  events: StoreEvent[],
  log: Logger,
  options?: WriteOptions,
): Promise<void> {
  const refused = await writer.write(events, options);
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
  const { settings } = options;
  const queue = new Queue(QUEUES.media, { connection: ctx.connection, prefix: ctx.prefix });
  queue.on('error', () => {}); // Redis going away is said once (src/cli/redis-watch.ts)
  const sweeper = await startPartialSweeper({
    dirs: () => store.media.dirs(),
    dataDir: options.dataDir,
    alive: workerAlive(ctx.redis, ctx.keys, ctx.workerId),
    log,
    ...(options.partialSweepMs === undefined ? {} : { intervalMs: options.partialSweepMs }),
  });
  const requeued = store.media.unqueuePending();
  if (requeued > 0) log.info({ media: requeued }, 'pending media queued again');

  const writer = ctx.writer ?? directWriter(store);
  const writes = awaitable((events: MediaEvent[]) =>
    recordMediaEvents(writer, events, log, { waitMs: MEDIA_COMMIT_DELAY_MS }),
  );
  const write = writes.push;
  if (!ctx.client) log.warn('no API key here: media whose URL expires cannot be re-issued');
  const agent = mediaAgent(options);
  // HARVEST_MEDIA_CONCURRENCY bounds transfers in flight; jobs in hand are more (see
  // MEDIA_JOBS_PER_SLOT).
  const slots = new DownloadSlots(settings.concurrency);
  // Aborted as the role closes: a transfer is free to start again, a close need not wait for it.
  const stopping = new AbortController();
  const processor = createMediaProcessor({
    store,
    write,
    downloader: createDownloader({
      agent,
      timeoutMs: settings.timeoutMs,
      maxRedirects: settings.maxRedirects,
      maxTransferMs: settings.maxTransferMs,
      slots,
      signal: stopping.signal,
    }),
    reissuer: mediaReissuer(ctx, store, settings, write),
    dataDir: options.dataDir,
    settings,
    owner: ctx.workerId,
    logger: log,
    pauseQueue: (code, reason) => pauseMediaQueue(queue, ctx.redis, ctx.keys, code, reason),
  });
  const workers = startMediaWorkers(ctx, processor, options, write);
  const enqueuer = mediaEnqueuer(ctx, queue, store, writer, options.pollMs);
  enqueuer.start();
  const urgency = watchMediaUrgency({
    nextDeadline: () => store.media.nextDeadline(),
    queue,
    slots,
    gate: ctx.searchGate,
    urgentMs: settings.urgentMs,
    log,
  });

  return {
    async close() {
      stopping.abort();
      await sweeper.stop();
      await urgency.stop();
      await enqueuer.stop();
      await Promise.all(workers.map((w) => w.close()));
      await writes.drain();
      await queue.close();
      await agent.close();
    },
  };
}

/** The HTTP agent of downloads: media hosts only, by the address rule (src/media/agent.ts). */
function mediaAgent(options: MediaRoleOptions) {
  const { settings } = options;
  return createGuardedAgent({
    allowedHosts: [originEntry(options.apiUrl), ...settings.allowHosts],
    connectTimeoutMs: settings.timeoutMs,
    // One per download in flight: media often comes from one host, and a download waiting for
    // a connection is a slot doing nothing.
    connections: settings.concurrency,
    ...(options.resolve ? { resolve: options.resolve } : {}),
  });
}

/** Gets fresh URLs for rows whose URL expired, by searching again (jobs/media/reissue.ts). */
function mediaReissuer(
  ctx: RoleContext,
  store: Store,
  settings: MediaSettings,
  write: (events: MediaEvent[]) => Promise<void>,
): Reissuer {
  return new Reissuer({
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
    log: ctx.log,
  });
}

/**
 * The media queue's BullMQ workers, MEDIA_JOBS_PER_SLOT jobs in hand per download slot, in
 * slices of SLOTS_PER_WORKER as in the search role: a BullMQ worker starts no job before all its
 * slots are fetched, one round trip each.
 */
function startMediaWorkers(
  ctx: RoleContext,
  processor: Processor,
  options: MediaRoleOptions,
  write: (events: MediaEvent[]) => Promise<void>,
): Worker[] {
  const jobsInHand = options.settings.concurrency * MEDIA_JOBS_PER_SLOT;
  const onFailed = endRowsOfFailedJob(write, ctx.log);
  return splitConcurrency(jobsInHand, SLOTS_PER_WORKER).map((slots) => {
    const worker = new Worker(QUEUES.media, processor, {
      connection: ctx.connection,
      prefix: ctx.prefix,
      concurrency: slots,
      lockDuration: options.lockDurationMs ?? 30_000,
      stalledInterval: options.stalledIntervalMs ?? 15_000,
      // A worker killed mid-download is not the download's fault.
      maxStalledCount: 100,
      settings: { backoffStrategy },
    });
    worker.on('error', (error) => ctx.log.error({ err: error }, 'media worker error'));
    worker.on('failed', onFailed);
    return worker;
  });
}

/**
 * The `failed` handler of media workers: a job out of attempts outside a download (a bug, a
 * database that stayed locked) ends its rows `failed` (those still pending: the event moves no
 * other), so the rows say so.
 */
function endRowsOfFailedJob(
  write: (events: MediaEvent[]) => Promise<void>,
  log: Logger,
): (job: Job | undefined, error: Error) => void {
  return (job, error) => {
    if (!job || job.attemptsMade < (job.opts.attempts ?? MEDIA_JOB_ATTEMPTS)) return;
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
}

/** The enqueuer of pending rows (./enqueue.ts), ranked by the shared anchor (./priority.ts). */
function mediaEnqueuer(
  ctx: RoleContext,
  queue: Queue,
  store: Store,
  writer: EventWriter,
  pollMs: number | undefined,
): MediaEnqueuer {
  return new MediaEnqueuer({
    queue,
    table: {
      unqueued: (limit) => store.media.unqueued(limit),
      // Through the writer, like every other move of a row: this thread never waits for a
      // commit's fsync (all downloads of the process would be held meanwhile). Not through the
      // sink: a batch of marks is a commit's worth already, and it is waited for.
      markQueued: (ids, at) =>
        recordMediaEvents(writer, [{ type: 'media-queued', mediaIds: [...ids], at }], ctx.log),
    },
    anchor: new PriorityAnchor(ctx.redis, ctx.keys.mediaPriorityAnchor, queue),
    log: ctx.log,
    ...(pollMs === undefined ? {} : { pollMs }),
  });
}
