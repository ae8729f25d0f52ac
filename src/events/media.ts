/**
 * Events of the media role: how a media row moves (src/store/media.ts). They go to the
 * database's one writer like the search workers' events, so SQLite's writes stay off the
 * thread that downloads, and concurrent downloads share a transaction. Each applies only to a
 * `pending` row, so a redelivered event changes nothing.
 */
import { z } from 'zod';

const epochMs = z.number().nonnegative().transform(Math.round);
const mediaId = z.number().int().positive();

/**
 * The file is on disk under its content address. It applies only while the row still points at
 * `sourceUrl`, the URL downloaded, or at another URL of `resultUrl`, the result it belonged to
 * (a re-issue refreshed it meanwhile): a newer answer may have given the row's position another
 * result, whose file this is not.
 */
export const MediaSavedEventSchema = z.object({
  type: z.literal('media-saved'),
  mediaId,
  sourceUrl: z.string().min(1),
  resultUrl: z.string().nullable(),
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  /** Relative to the data directory. */
  path: z.string().min(1),
  bytes: z.number().int().nonnegative(),
  contentType: z.string().min(1),
  at: epochMs,
});

/** The row ends without a file: `failed` (refused, unrecoverable) or `expired`. */
export const MediaEndedEventSchema = z.object({
  type: z.literal('media-ended'),
  mediaId,
  status: z.enum(['failed', 'expired']),
  code: z.string().min(1),
  message: z.string(),
  /** A download ended it (one more attempt). */
  attempted: z.boolean(),
  at: epochMs,
});

/** A fresh URL from a re-issued search; `countReissue` when the row needed it. */
export const MediaRefreshedEventSchema = z.object({
  type: z.literal('media-refreshed'),
  mediaId,
  sourceUrl: z.string().min(1),
  issuedAt: epochMs,
  expiresAt: epochMs,
  deadlineAt: epochMs,
  countReissue: z.boolean(),
  at: epochMs,
});

/** A download failed and will be tried again (counts against the row's attempts). */
export const MediaRetryEventSchema = z.object({
  type: z.literal('media-retry'),
  mediaId,
  at: epochMs,
});

/**
 * Rows handed to the media queue (jobs/media/enqueue.ts): committed by the database's one
 * writer, so the process that queues them never waits for a commit (and its fsync) itself.
 */
export const MediaQueuedEventSchema = z.object({
  type: z.literal('media-queued'),
  mediaIds: z.array(mediaId).min(1),
  at: epochMs,
});

export type MediaSavedEvent = z.infer<typeof MediaSavedEventSchema>;
export type MediaEndedEvent = z.infer<typeof MediaEndedEventSchema>;
export type MediaRefreshedEvent = z.infer<typeof MediaRefreshedEventSchema>;
export type MediaRetryEvent = z.infer<typeof MediaRetryEventSchema>;
export type MediaQueuedEvent = z.infer<typeof MediaQueuedEventSchema>;
export type MediaEvent =
  | MediaSavedEvent
  | MediaEndedEvent
  | MediaRefreshedEvent
  | MediaRetryEvent
  | MediaQueuedEvent;

/** Longest reason kept on a row whose event the database refused, in characters. */
const REFUSED_REASON_MAX = 1000;

/**
 * Endings for rows whose events the database refused (they failed validation: a bug of
 * harvest's, which no retry mends): left as they are, such rows stayed `pending` for good, their
 * run's media never finished, and every start of a media role downloaded them again. Each row
 * named by a refused event (but a `media-queued` one, which only marks rows as having a job:
 * they are queued again) ends `failed` with code MEDIA_EVENT_REFUSED and what was wrong. Pure.
 */
export function endingsForRefused(
  events: readonly unknown[],
  refused: ReadonlyArray<{ index: number; issues: string[] }>,
  at: number,
): MediaEndedEvent[] {
  const endings = new Map<number, MediaEndedEvent>();
  for (const { index, issues } of refused) {
    const event = events[index] as { type?: unknown; mediaId?: unknown } | undefined;
    const id = mediaId.safeParse(event?.mediaId);
    if (!id.success || event?.type === 'media-queued' || endings.has(id.data)) continue;
    const message = `harvest could not record its ${String(event?.type)} event: ${issues.join('; ')}`;
    endings.set(id.data, {
      type: 'media-ended',
      mediaId: id.data,
      status: 'failed',
      code: 'MEDIA_EVENT_REFUSED',
      message: message.slice(0, REFUSED_REASON_MAX),
      attempted: false,
      at,
    });
  }
  return [...endings.values()];
}
