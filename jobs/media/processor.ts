/**
 * The `media` queue's processor, run on the host that owns the database. A job names a few
 * media rows (src/store/media.ts; jobs/media/enqueue.ts groups them) and handles them at
 * once: each row's URL is downloaded into content-addressed storage and the row marked saved;
 * what it does after a failure is the MediaError's `next` (src/media/errors.ts):
 *
 * | failure / situation                             | what the job does                        |
 * |-------------------------------------------------|------------------------------------------|
 * | deadline already past when the job starts       | fresh URL (jobs/media/reissue.ts), then download; the old URL while it lasts when no fresh one can be had |
 * | media host refuses (400/401/403)                | fresh URL, then download                 |
 * | transient (5xx, reset, timeout, a transfer cut off at its deadline) | retried later with backoff, never past the deadline; failed after `maxAttempts` |
 * | the disk is full (ENOSPC)                       | media queue paused with the reason; no attempt spent; tried again once resumed |
 * | the worker stops mid-transfer                   | left pending for the next worker; no attempt spent |
 * | refused for good (address, type, size, 404)     | row failed, with the reason              |
 *
 * A row no longer pending is left alone, so a redelivered job (its worker died after saving)
 * never downloads twice, and neither does a row another job of this process has in hand. The
 * job completes once all its rows have ended; when some must be tried again later, it fails
 * with the soonest of their waits once the others are done, and the retry finds only those
 * pending. The rows, not the job, are the record. Rows move by media events
 * (src/events/media.ts) handed to the database's one writer; `write` resolves once they
 * are committed.
 */
import type { Job } from 'bullmq';
import { z } from 'zod';
import { backoffDelayMs } from '../../src/api/backoff.ts';
import type { MediaSettings } from '../../src/config.ts';
import type { MediaEvent } from '../../src/events/media.ts';
import type { Logger } from '../../src/log.ts';
import type { Downloader } from '../../src/media/download.ts';
import { asMediaError, type MediaError } from '../../src/media/errors.ts';
import { mediaRoot } from '../../src/media/storage.ts';
import { RetryLaterError, unrecoverable } from '../../src/queue/retry.ts';
import type { Store } from '../../src/store/index.ts';
import type { MediaConfig, MediaRow } from '../../src/store/media.ts';
import type { ReissueCause, ReissueOutcome, Reissuer } from './reissue.ts';

export interface MediaJobDeps {
  /** Reads media rows and what each run saves. */
  store: Store;
  /** Commits media events (the rows' moves); resolves once they are committed. */
  write(events: MediaEvent[]): Promise<void>;
  downloader: Downloader;
  reissuer: Reissuer;
  /** The data directory; media folders and stored paths are relative to it. */
  dataDir: string;
  settings: Pick<MediaSettings, 'maxAttempts' | 'maxReissues'>;
  /** Pauses the media queue for a fault of this host (a full disk), saying why. */
  pauseQueue?(code: string, reason: string): Promise<void>;
  /** Names this worker's partial files (a worker id). */
  owner: string;
  logger: Logger;
  now?: () => number;
  random?: () => number;
}

const mediaId = z.number().int().positive();
/** `mediaIds`; `mediaId` is a job queued by a harvest that queued one row per job. */
const MediaJobDataSchema = z.union([
  z.object({ mediaIds: z.array(mediaId).min(1) }).transform((d) => d.mediaIds),
  z.object({ mediaId }).transform((d) => [d.mediaId]),
]);

/** First retry of a transient failure, in ms (doubling, with jitter, up to 30 s). */
const RETRY_BASE_MS = 500;
const RETRY_MAX_MS = 30_000;

export type MediaRowResult = { status: MediaRow['status'] | 'missing' | 'in-hand' };
export type MediaJobResult = { rows: Record<number, MediaRowResult['status']> };

/** The media ids a job names; throws an unrecoverable error when it names none. */
export function mediaIdsOf(job: Pick<Job, 'id' | 'data'>): number[] {
  const parsed = MediaJobDataSchema.safeParse(job.data);
  // Malformed data cannot get better by trying again; its rows (if any) are queued anew on the
  // media role's next start.
  if (!parsed.success) throw unrecoverable(`media job ${job.id} carries no media ids`);
  return parsed.data;
}

/** What the functions below share: the deps, with the clock and randomness resolved. */
interface RowContext {
  deps: MediaJobDeps;
  store: Store;
  now: () => number;
  random: () => number;
  /** Rows a job of this process is working on. */
  inHand: Set<number>;
}

export function createMediaProcessor(deps: MediaJobDeps) {
  const c: RowContext = {
    deps,
    store: deps.store,
    now: deps.now ?? Date.now,
    random: deps.random ?? Math.random,
    inHand: new Set<number>(),
  };
  return async function processMedia(job: Job): Promise<MediaJobResult> {
    const ids = mediaIdsOf(job);
    const outcomes = await Promise.allSettled(ids.map((id) => processUnlessInHand(c, id)));
    return jobResult(ids, outcomes);
  };
}

/** A row another job of this process has in hand is left to it. */
async function processUnlessInHand(c: RowContext, id: number): Promise<MediaRowResult> {
  if (c.inHand.has(id)) return { status: 'in-hand' };
  c.inHand.add(id);
  try {
    return await processRow(c, id);
  } finally {
    c.inHand.delete(id);
  }
}

/**
 * The job's result from its rows' outcomes. A row that failed outside a download (a bug, a
 * locked database) fails the job, which BullMQ tries again; else the soonest wait of the rows
 * to retry fails it; rows that wait for a retry come back with it either way.
 */
function jobResult(
  ids: readonly number[],
  outcomes: PromiseSettledResult<MediaRowResult>[],
): MediaJobResult {
  const rows: MediaJobResult['rows'] = {};
  let retry: RetryLaterError | undefined;
  let failure: unknown;
  outcomes.forEach((outcome, i) => {
    if (outcome.status === 'fulfilled') rows[ids[i]!] = outcome.value.status;
    else if (outcome.reason instanceof RetryLaterError) {
      if (!retry || outcome.reason.delayMs < retry.delayMs) retry = outcome.reason;
    } else failure ??= outcome.reason;
  });
  if (failure !== undefined) throw failure;
  if (retry) throw retry;
  return { rows };
}

async function processRow(c: RowContext, mediaId: number): Promise<MediaRowResult> {
  const { store } = c;
  // Each round ends the row, or gets it a fresh URL (bounded by maxReissues), or waits.
  for (let round = 0; round <= c.deps.settings.maxReissues + 2; round++) {
    const row = store.media.get(mediaId);
    if (row?.status !== 'pending') return { status: row?.status ?? 'missing' };
    const config = store.media.config(row.runId);
    if (!config) {
      return end(c, row, 'MEDIA_SETTINGS_MISSING', `run ${row.runId} saves no media`, false);
    }
    if (c.now() > row.deadlineAt) {
      const outcome = await pastDeadline(c, row);
      if (outcome) {
        if (outcome.kind === 'refreshed') continue;
        return settle(c, row, outcome);
      }
    }
    let error: MediaError;
    try {
      if (await save(c, row, config)) return { status: 'saved' };
      continue;
    } catch (caught) {
      error = asMediaError(caught);
    }
    if (error.next === 'fail') return end(c, row, error.code, error.message, true);
    if (error.next === 'pause' || error.next === 'stop') return heldBack(c, row, error);
    if (error.next === 'reissue') {
      const outcome = await c.deps.reissuer.refresh(row, refusalCause(error, row, c.now()));
      if (outcome.kind === 'refreshed') continue;
      return settle(c, row, outcome);
    }
    return retryOrEnd(c, row, error);
  }
  throw new RetryLaterError('media item still has no usable URL', RETRY_BASE_MS);
}

/**
 * Downloads the row's URL and commits it saved; false when the row is still pending: another
 * result took its position during the download, and the next round fetches what it points at now.
 */
async function save(c: RowContext, row: MediaRow, config: MediaConfig): Promise<boolean> {
  const { deps } = c;
  const saved = await deps.downloader.download({
    url: row.sourceUrl,
    kind: row.kind,
    maxBytes: config.maxBytes,
    dataDir: deps.dataDir,
    root: mediaRoot(deps.dataDir, config.dir),
    owner: deps.owner,
    deadlineAt: row.deadlineAt,
    ...(row.expiresAt === null ? {} : { expiresAt: row.expiresAt }),
  });
  await deps.write([
    {
      type: 'media-saved',
      mediaId: row.id,
      sourceUrl: row.sourceUrl,
      resultUrl: row.resultUrl,
      sha256: saved.sha256,
      path: saved.relPath,
      bytes: saved.bytes,
      contentType: saved.contentType,
      at: c.now(),
    },
  ]);
  return c.store.media.get(row.id)?.status !== 'pending';
}

/**
 * A fresh URL for a row whose deadline passed, or undefined to try the old one while it
 * lasts: when the row may have no more fresh URLs, and when none can be had now (no API key,
 * the run's budget, a stopped run; or the call must wait) while the old one still works.
 */
async function pastDeadline(c: RowContext, row: MediaRow): Promise<ReissueOutcome | undefined> {
  const { now } = c;
  const lateMs = now() - row.deadlineAt;
  const cause: ReissueCause = {
    code: 'DEADLINE_PASSED',
    message: `its download had not started ${formatMs(lateMs)} after its deadline`,
    expired: true,
  };
  const lasts = () => row.expiresAt !== null && now() < row.expiresAt;
  if (row.reissues >= c.deps.settings.maxReissues && lasts()) return undefined;
  const outcome = await c.deps.reissuer.refresh(row, cause, { keepOnRefusal: lasts() });
  // Asked again: the call may have taken long enough for the old URL to expire meanwhile.
  if ((outcome.kind === 'unavailable' || outcome.kind === 'wait') && lasts()) return undefined;
  if (outcome.kind === 'unavailable') {
    await end(c, row, outcome.code, outcome.message, false);
    return { kind: 'ended' };
  }
  return outcome;
}

function settle(c: RowContext, row: MediaRow, outcome: ReissueOutcome): MediaRowResult {
  if (outcome.kind === 'wait') {
    throw new RetryLaterError(`fresh URL: ${outcome.reason}`, outcome.delayMs);
  }
  // `unavailable` comes only to a caller that asked for it (pastDeadline), which ends the row.
  return { status: c.store.media.get(row.id)?.status ?? 'missing' };
}

async function end(
  c: RowContext,
  row: MediaRow,
  code: string,
  message: string,
  attempted: boolean,
): Promise<MediaRowResult> {
  await c.deps.write([
    {
      type: 'media-ended',
      mediaId: row.id,
      status: 'failed',
      code,
      message,
      attempted,
      at: c.now(),
    },
  ]);
  c.deps.logger.warn({ mediaId: row.id, runId: row.runId, code, message }, 'media not saved');
  return { status: 'failed' };
}

/** Retries a transient failure later, within the deadline; fails it after `maxAttempts`. */
async function retryOrEnd(
  c: RowContext,
  row: MediaRow,
  error: MediaError,
): Promise<MediaRowResult> {
  const { now } = c;
  const attempts = row.attempts + 1;
  // Every fresh URL gets its own attempts.
  if (attempts >= c.deps.settings.maxAttempts * (row.reissues + 1)) {
    return end(c, row, error.code, `${error.message} (gave up after ${attempts} attempts)`, true);
  }
  await c.deps.write([{ type: 'media-retry', mediaId: row.id, at: now() }]);
  const delayMs = backoffDelayMs({
    attemptsMade: attempts,
    random: c.random,
    baseDelayMs: RETRY_BASE_MS,
    maxDelayMs: RETRY_MAX_MS,
    ...(error.retryAfterMs === undefined ? {} : { retryAfterMs: error.retryAfterMs }),
  });
  // Never wait past the deadline (or, once it has passed, the expiry): the next try then
  // starts with a fresh URL.
  const until = now() <= row.deadlineAt ? row.deadlineAt : (row.expiresAt ?? row.deadlineAt);
  throw new RetryLaterError(error.message, Math.max(0, Math.min(delayMs, until - now())));
}

/** Time between two tries of a row held back by a paused queue or a stopping worker, in ms. */
const HELD_RETRY_MS = 1000;

/**
 * A failure that is not the URL's: no attempt is spent. A full disk pauses the media queue with
 * the reason (`harvest status`; `harvest media retry` resumes it once there is room); a worker
 * stopping leaves the row to the next one.
 */
async function heldBack(c: RowContext, row: MediaRow, error: MediaError): Promise<never> {
  if (error.next === 'pause') {
    c.deps.logger.warn(
      { mediaId: row.id, runId: row.runId, code: error.code, message: error.message },
      'media queue paused: free space, then `harvest media retry`',
    );
    await c.deps.pauseQueue?.(error.code, error.message);
  }
  throw new RetryLaterError(error.message, HELD_RETRY_MS);
}

function refusalCause(error: MediaError, row: MediaRow, nowMs: number): ReissueCause {
  return {
    code: error.hostCode ?? error.code,
    message: error.message,
    expired:
      error.hostCode === 'ExpiredToken' || nowMs >= (row.expiresAt ?? Number.POSITIVE_INFINITY),
  };
}

function formatMs(ms: number): string {
  return ms < 10_000 ? `${ms} ms` : `${Math.round(ms / 1000)} s`;
}
