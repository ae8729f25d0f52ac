/**
 * The one translation between harvest's retry decisions (src/api/backoff.ts, pure) and
 * BullMQ: the errors a processor throws, the marker of failures it recorded itself, the custom
 * backoff types and the strategy that serves them.
 *
 * | decision / failure              | thrown to BullMQ                 | BullMQ then                    |
 * |---------------------------------|----------------------------------|--------------------------------|
 * | rate-limit, pause               | RateLimitError                   | job back to wait, no attempt   |
 * | over the learned rate limit     | RateLimitError                   | job back to wait, no attempt   |
 * | retry (delayMs)                 | RetryLaterError, recorded        | delayed by `delayMs`           |
 * | fail                            | UnrecoverableError, recorded     | failed, no more attempts       |
 * | store job failed (a commit)     | the error                        | delayed by `storeRetryDelayMs` |
 * | media download to retry         | RetryLaterError                  | delayed by `delayMs`           |
 *
 * Media jobs never throw RateLimitError: it would stop the whole media queue, and a media
 * host's or a re-issue's wait concerns one job.
 */
import { RateLimitError, UnrecoverableError } from 'bullmq';
import { type Decision, storeRetryDelayMs } from '../api/backoff.ts';

/** Backoff type of search jobs: the delay the processor chose (RetryLaterError). */
export const SEARCH_BACKOFF = 'harvest';
/** Backoff type of store jobs: capped full-jitter backoff (`storeRetryDelayMs`). */
export const STORE_BACKOFF = 'harvest-store';
/** Backoff type of media jobs: the delay the processor chose (RetryLaterError). */
export const MEDIA_BACKOFF = 'harvest-media';

/** Carries the backoff delay to BullMQ's custom backoff strategy. */
export class RetryLaterError extends Error {
  readonly delayMs: number;
  constructor(message: string, delayMs: number, options: { cause?: unknown } = {}) {
    super(message, options);
    this.name = 'RetryLaterError';
    this.delayMs = delayMs;
  }
}

const RECORDED = Symbol('harvest.recorded');

/** Marks an error whose failure the processor recorded itself, so nobody records it again. */
export function markRecorded<E extends Error>(error: E): E {
  (error as E & { [RECORDED]?: true })[RECORDED] = true;
  return error;
}

export function isRecorded(error: unknown): boolean {
  return typeof error === 'object' && error !== null && RECORDED in error;
}

/**
 * The error that makes BullMQ do what `decision` says. Failures the processor has recorded
 * come back marked; waits (rate limit, pause) spend no attempt and are not failures at all.
 */
export function decisionError(decision: Decision, cause?: unknown): Error {
  switch (decision.kind) {
    case 'rate-limit':
    case 'pause':
      return new RateLimitError();
    case 'retry': {
      const message = cause instanceof Error ? cause.message : 'retry later';
      return markRecorded(new RetryLaterError(message, decision.delayMs, { cause }));
    }
    case 'fail':
      return markRecorded(new UnrecoverableError(`${decision.code}: ${decision.message}`));
  }
}

/** A call the rate controller holds back (src/queue/rate/controller.ts `beforeCall`). */
export function overRateLimit(): Error {
  return new RateLimitError();
}

/** A failure BullMQ will not retry (recorded by the caller). */
export function unrecoverable(message: string): UnrecoverableError {
  return markRecorded(new UnrecoverableError(message));
}

/** The `settings.backoffStrategy` of every harvest worker. */
export function backoffStrategy(
  attemptsMade: number,
  type: string | undefined,
  error: Error | undefined,
): number {
  if (type === STORE_BACKOFF) return storeRetryDelayMs(attemptsMade, Math.random);
  return error instanceof RetryLaterError ? error.delayMs : 1000;
}
