/**
 * The retry policy, in one pure function: given a failed call, what the runner does next.
 * The runner translates a Decision into BullMQ terms (rate limit, delayed retry,
 * UnrecoverableError, queue pause); nothing else decides about retries.
 *
 * | error                                                  | decision                      |
 * |--------------------------------------------------------|-------------------------------|
 * | RateLimitedError                                       | rate-limit (no attempt spent) |
 * | TimeoutError, ServerError, NetworkError, BadResponseError | retry while attempts remain, else fail |
 * | BadRequestError, ForbiddenError, NotFoundError, other  | fail                          |
 * | UnauthorizedError, PaymentRequiredError                | pause                         |
 */

import { HarvestError } from '../errors.ts';
import {
  type ApiError,
  BadResponseError,
  NetworkError,
  PaymentRequiredError,
  RateLimitedError,
  ServerError,
  TimeoutError,
  UnauthorizedError,
} from './errors.ts';

export type Decision =
  /** Set the queue's global rate limit for `waitMs` and re-queue without spending an attempt. */
  | { kind: 'rate-limit'; waitMs: number }
  /** Try the job again after `delayMs`. */
  | { kind: 'retry'; delayMs: number }
  /** Give up on this job for good; record `code` and `message`. */
  | { kind: 'fail'; code: string; message: string }
  /** Pause the run's queue; `reason` tells a human what to do before resuming. */
  | { kind: 'pause'; code: string; reason: string };

export interface RetryInput {
  error: unknown;
  /** Attempts already used, including the one that just failed (1 after the first failure). */
  attemptsMade: number;
  /** Attempts the job may use in total. */
  maxAttempts: number;
  /** Source of jitter in [0, 1); pass `Math.random` in production, a constant in tests. */
  random: () => number;
  /** Backoff of the first retry before jitter, in milliseconds. Default 1000. */
  baseDelayMs?: number;
  /** Largest backoff before jitter, in milliseconds. Default 60000. */
  maxDelayMs?: number;
  /**
   * Wait after a 429 that gave no hint, in milliseconds. Default 5000: the service counts
   * requests per minute, so a shorter wait mostly meets another 429.
   */
  defaultRateLimitWaitMs?: number;
  /** Run id named in a pause reason's resume command; default the placeholder `RUN`. */
  runId?: string;
}

export const DEFAULT_BASE_DELAY_MS = 1000;
export const DEFAULT_MAX_DELAY_MS = 60_000;
export const DEFAULT_RATE_LIMIT_WAIT_MS = 5000;

/**
 * True when the same call may succeed if made again later: rate limited, timed out, 5xx,
 * network failure or an unusable response. Client errors, auth and credits are not.
 */
export function isRetryable(error: unknown): boolean {
  return error instanceof RateLimitedError || isBackoffRetryable(error);
}

function isBackoffRetryable(error: unknown): error is ApiError {
  return (
    error instanceof TimeoutError ||
    error instanceof ServerError ||
    error instanceof NetworkError ||
    error instanceof BadResponseError
  );
}

/**
 * Exponential backoff with full jitter, capped: `random() * min(maxDelayMs,
 * baseDelayMs * 2^(attemptsMade - 1))`, rounded to whole ms. A Retry-After hint on the error
 * is a floor (and may exceed `maxDelayMs`: the service asked for it).
 */
export function backoffDelayMs(input: {
  attemptsMade: number;
  random: () => number;
  baseDelayMs?: number;
  maxDelayMs?: number;
  retryAfterMs?: number;
}): number {
  const base = input.baseDelayMs ?? DEFAULT_BASE_DELAY_MS;
  const max = input.maxDelayMs ?? DEFAULT_MAX_DELAY_MS;
  const exponent = Math.max(0, input.attemptsMade - 1);
  const ceiling = Math.min(max, base * 2 ** exponent);
  const jittered = Math.round(clampUnit(input.random()) * ceiling);
  return Math.max(jittered, input.retryAfterMs ?? 0);
}

/**
 * Attempts of a `store` job (a batch of events on its way to SQLite). With the delays of
 * `storeRetryDelayMs` they span over an hour on average: a database that is locked, full or being
 * moved for that long costs time, not records.
 */
export const STORE_JOB_ATTEMPTS = 150;

/** Delay before a failed `store` job is tried again: the capped full-jitter backoff above. */
export function storeRetryDelayMs(attemptsMade: number, random: () => number): number {
  return backoffDelayMs({ attemptsMade, random });
}

/** Decides what the runner does after a failed call. Pure. */
export function decideRetry(input: RetryInput): Decision {
  const { error } = input;
  if (error instanceof RateLimitedError) {
    return {
      kind: 'rate-limit',
      waitMs: error.retryAfterMs ?? input.defaultRateLimitWaitMs ?? DEFAULT_RATE_LIMIT_WAIT_MS,
    };
  }
  const resume = `harvest run --resume ${input.runId ?? 'RUN'}`;
  if (error instanceof UnauthorizedError) {
    return {
      kind: 'pause',
      code: error.code,
      reason: `The API rejected the key (${error.message}). Check HARVEST_API_KEY, then run \`${resume}\`.`,
    };
  }
  if (error instanceof PaymentRequiredError) {
    return {
      kind: 'pause',
      code: error.code,
      reason: `The account has no credits left (${error.message}). Add credits or upgrade the plan, then run \`${resume}\`.`,
    };
  }
  if (isBackoffRetryable(error)) {
    if (input.attemptsMade < input.maxAttempts) {
      const delayInput: Parameters<typeof backoffDelayMs>[0] = {
        attemptsMade: input.attemptsMade,
        random: input.random,
      };
      if (input.baseDelayMs !== undefined) delayInput.baseDelayMs = input.baseDelayMs;
      if (input.maxDelayMs !== undefined) delayInput.maxDelayMs = input.maxDelayMs;
      if (error.retryAfterMs !== undefined) delayInput.retryAfterMs = error.retryAfterMs;
      return { kind: 'retry', delayMs: backoffDelayMs(delayInput) };
    }
    return {
      kind: 'fail',
      code: error.code,
      message: `${error.message} (gave up after ${input.attemptsMade} attempt${input.attemptsMade === 1 ? '' : 's'})`,
    };
  }
  if (error instanceof HarvestError)
    return { kind: 'fail', code: error.code, message: error.message };
  const message = error instanceof Error ? error.message : String(error);
  return { kind: 'fail', code: 'UNEXPECTED_ERROR', message };
}

function clampUnit(value: number): number {
  if (!Number.isFinite(value) || value <= 0) return 0;
  return Math.min(value, 1);
}
