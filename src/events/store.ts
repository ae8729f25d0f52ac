/**
 * Events the search worker hands to the store: through the `store` queue, or straight to SQLite
 * when its process owns the database. Search jobs never open SQLite; `applyEvents` validates
 * these and writes them idempotently, so redelivering a store job never doubles a row.
 *
 * Terminology: a *task* is one planned search of a run (`runId` + `taskKey`); a BullMQ job
 * runs it, possibly over several *attempts*; each HTTP request an attempt makes is a *call*;
 * each item in a successful response is a *result*.
 */
import { z } from 'zod';
import {
  MediaEndedEventSchema,
  MediaQueuedEventSchema,
  MediaRefreshedEventSchema,
  MediaRetryEventSchema,
  MediaSavedEventSchema,
} from './media.ts';

/** Error codes a call can end with (`outcome` is `'ok'` or one of these). */
export const CALL_ERROR_CODES = [
  'RATE_LIMITED',
  'TIMEOUT',
  'SERVER_ERROR',
  'NETWORK',
  'BAD_RESPONSE',
  'RESPONSE_TOO_LARGE',
  'BAD_REQUEST',
  'FORBIDDEN',
  'NOT_FOUND',
  'UNAUTHORIZED',
  'PAYMENT_REQUIRED',
  'LOST',
] as const;
export type CallErrorCode = (typeof CALL_ERROR_CODES)[number];

export const CALL_OUTCOMES = ['ok', ...CALL_ERROR_CODES] as const;
export type CallOutcome = (typeof CALL_OUTCOMES)[number];

export const CALL_PURPOSES = ['search', 'media-reissue'] as const;
export type CallPurpose = (typeof CALL_PURPOSES)[number];

export const TASK_STATUSES = ['queued', 'running', 'retrying', 'done', 'failed'] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

export const RESULT_SOURCES = ['web', 'news', 'images'] as const;
export type ResultSource = (typeof RESULT_SOURCES)[number];

/** ms since the epoch; fractions (from `performance` clocks) are rounded. */
const epochMs = z.number().nonnegative().transform(Math.round);
const key = z.string().min(1).max(1024);
const text = z.string().nullish();

/** One HTTP call to the API, successful or not. Written once per `callId`. */
export const CallEventSchema = z.object({
  type: z.literal('call'),
  /** Made by the worker for each HTTP call (a UUID); the idempotency key of the call row. */
  callId: z.guid(),
  runId: key,
  taskKey: key,
  /** The job attempt this call belongs to, from 1. */
  attempt: z.number().int().min(1),
  /** When the request was sent, ms since the epoch. */
  startedAt: epochMs,
  /** Time until the response (or the failure), in ms; rounded when stored. */
  durationMs: z.number().nonnegative(),
  /** HTTP status, or null when no response arrived. */
  status: z.number().int().min(100).max(599).nullable(),
  outcome: z.enum(CALL_OUTCOMES),
  errorMessage: text,
  /** The API's search job id (`id` of the response), when there was one. */
  searchId: text,
  warning: text,
  /** `creditsUsed` of the response; null when unknown (no response, or an error body). */
  creditsUsed: z.number().int().nonnegative().nullable(),
  /** Retry-After of a 429/503, in ms. */
  retryAfterMs: z.number().int().nonnegative().nullish(),
  /**
   * The most the call's request could cost by the credit rules (src/contract/credits.ts); null
   * or absent when not foreseeable (PDF pages without a bound) or not known (older records).
   */
  creditsMax: z.number().int().nonnegative().nullish(),
  /**
   * `creditsUsed` is implausible: above `creditsMax` times the anomaly factor
   * (HARVEST_CREDITS_ANOMALY_FACTOR). Stored as billed all the same, and flagged.
   */
  creditsAnomaly: z.boolean().optional(),
  /**
   * Why the call was made: `search` (a task's attempt, the default) or `media-reissue` (the
   * search called again for fresh media URLs after one expired), so cost reports can tell them
   * apart.
   */
  purpose: z.enum(CALL_PURPOSES).optional(),
});
export type CallEvent = z.infer<typeof CallEventSchema>;

export const ResultItemSchema = z.object({
  source: z.enum(RESULT_SOURCES),
  /** 0-based position within its source array of the response. */
  position: z.number().int().nonnegative(),
  /** The item exactly as the API sent it. */
  item: z.record(z.string(), z.unknown()),
});
export type ResultItem = z.infer<typeof ResultItemSchema>;

/**
 * The items of one successful response: the whole result set of the task. A later event for
 * the same task (a re-issued search) replaces it; an earlier one arriving late is ignored.
 */
export const ResultsEventSchema = z.object({
  type: z.literal('results'),
  runId: key,
  taskKey: key,
  callId: z.guid(),
  searchId: text,
  /** When the response arrived, ms since the epoch; orders re-issued searches of a task. */
  fetchedAt: epochMs,
  items: z.array(ResultItemSchema),
});
export type ResultsEvent = z.infer<typeof ResultsEventSchema>;

/**
 * A task's status change. Applied monotonically: `done` is final; `failed` only gives way to
 * `done`; among `queued`, `running` and `retrying` the event with the latest `at` wins.
 */
export const TaskEventSchema = z.object({
  type: z.literal('task'),
  runId: key,
  taskKey: key,
  status: z.enum(TASK_STATUSES),
  /** Attempts made so far, counting the one this event is about. The stored value only grows. */
  attempts: z.number().int().nonnegative(),
  errorCode: text,
  errorMessage: text,
  /** When the change happened, ms since the epoch. */
  at: epochMs,
});
export type TaskEvent = z.infer<typeof TaskEventSchema>;

export const StoreEventSchema = z.discriminatedUnion('type', [
  CallEventSchema,
  ResultsEventSchema,
  TaskEventSchema,
  MediaSavedEventSchema,
  MediaEndedEventSchema,
  MediaRefreshedEventSchema,
  MediaRetryEventSchema,
  MediaQueuedEventSchema,
]);
export type StoreEvent = z.infer<typeof StoreEventSchema>;
