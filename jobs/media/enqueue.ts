/**
 * Hands media rows to the media queue. Rows are written with their results (in the same
 * transaction), so the database, not Redis, says what is to be downloaded: this loop takes
 * pending rows without a job, earliest deadline first, adds jobs for them ranked by deadline
 * (./priority.ts), and only then marks the rows queued. A process that dies in between leaves
 * rows unmarked, and they are queued again; a media role's start and a resume unmark every
 * pending row (src/store/media.ts `unqueuePending`), which also recovers jobs a Redis lost.
 *
 * A job carries up to MEDIA_ROWS_PER_JOB rows whose deadlines lie within MEDIA_JOB_SPAN_MS of
 * the first (a search answer's files are signed together): a BullMQ job's fixed cost in CPU,
 * here and in Redis, is of the order of a small file's download, and is paid once per job,
 * not once per file. The job id comes from its rows and their versions (src/queue/names.ts
 * `mediaJobId`), so adding the same rows twice is harmless; rows grouped differently after a
 * re-drive may sit in two jobs, and the processor downloads a row once whichever comes first
 * (./processor.ts).
 */
import type { Queue } from 'bullmq';
import type { Logger } from '../../src/log.ts';
import { mediaJobId } from '../../src/queue/names.ts';
import { MEDIA_BACKOFF } from '../../src/queue/retry.ts';
import type { UnqueuedRow } from '../../src/store/media.ts';
import { deadlinePriority, type PriorityAnchor } from './priority.ts';

/** What the enqueuer needs of the media table. */
export interface UnqueuedMedia {
  unqueued(limit: number): UnqueuedRow[];
  /** Marks the rows queued; when it returns a promise, the rows are marked once it resolves. */
  markQueued(ids: readonly number[], at: number): unknown;
}

export interface MediaJobData {
  /** Media row ids, earliest deadline first. */
  mediaIds: number[];
}

/** Most rows in one media job. */
export const MEDIA_ROWS_PER_JOB = 8;
/** Widest spread of deadlines in one media job, in ms: its rank is its first row's. */
export const MEDIA_JOB_SPAN_MS = 1000;

/**
 * Rows (earliest deadline first) cut into jobs' worth: consecutive rows, at most `maxRows`,
 * deadlines within `spanMs` of the first. Pure.
 */
export function groupMediaRows<T extends { id: number; deadlineAt: number }>(
  rows: readonly T[],
  maxRows = MEDIA_ROWS_PER_JOB,
  spanMs = MEDIA_JOB_SPAN_MS,
): T[][] {
  const groups: T[][] = [];
  let group: T[] = [];
  for (const row of rows) {
    const first = group[0];
    if (first && (group.length >= maxRows || row.deadlineAt - first.deadlineAt > spanMs)) {
      groups.push(group);
      group = [];
    }
    group.push(row);
  }
  if (group.length > 0) groups.push(group);
  return groups;
}

export interface MediaEnqueuerOptions {
  queue: Queue;
  table: UnqueuedMedia;
  anchor: PriorityAnchor;
  log: Logger;
  /**
   * How often the database is looked at for new rows, in ms. Default 50: a wait that comes off
   * every URL's lifetime (short ones live seconds in tests and benchmarks), for one indexed
   * query that finds nothing most of the time.
   */
  pollMs?: number;
  /** Rows queued per round trip. Default 500. */
  batch?: number;
}

/**
 * BullMQ attempts of a media job. The processor itself decides when a download has failed for
 * good (settings `maxAttempts`, `maxReissues`) and then completes the job; this only bounds a
 * job that keeps failing outside a download (a bug, a database that stays locked).
 */
export const MEDIA_JOB_ATTEMPTS = 1000;

export class MediaEnqueuer {
  readonly #o: Required<MediaEnqueuerOptions>;
  #timer: NodeJS.Timeout | undefined;
  #round: Promise<void> | undefined;
  #stopped = false;

  constructor(options: MediaEnqueuerOptions) {
    this.#o = { pollMs: 50, batch: 500, ...options };
  }

  start(): void {
    this.#schedule(0);
  }

  /** Queues every waiting row now (tests, and callers that know rows were just written). */
  async flush(): Promise<number> {
    await this.#round;
    return this.#queueAll();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#round;
  }

  #schedule(delayMs: number): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      this.#round = this.#queueAll()
        .then(() => undefined)
        .catch((error: unknown) => this.#o.log.error({ err: error }, 'queueing media failed'))
        .finally(() => this.#schedule(this.#o.pollMs));
    }, delayMs);
  }

  async #queueAll(): Promise<number> {
    let queued = 0;
    for (;;) {
      const rows = this.#o.table.unqueued(this.#o.batch);
      if (rows.length === 0) return queued;
      const anchor = await this.#o.anchor.current(Date.now());
      await this.#o.queue.addBulk(
        groupMediaRows(rows).map((group) => ({
          name: 'media',
          data: { mediaIds: group.map((r) => r.id) } satisfies MediaJobData,
          opts: {
            jobId: mediaJobId(group),
            priority: deadlinePriority(group[0]!.deadlineAt, anchor),
            attempts: MEDIA_JOB_ATTEMPTS,
            backoff: { type: MEDIA_BACKOFF },
            removeOnComplete: true,
            removeOnFail: true,
          },
        })),
      );
      await this.#o.table.markQueued(
        rows.map((r) => r.id),
        Date.now(),
      );
      queued += rows.length;
      if (rows.length < this.#o.batch) return queued;
    }
  }
}
