/**
 * A short in-process retry of one API call, for commands that have no job to hand a retry to
 * (`harvest crawls ...`). What to do after a failure is the runner's own policy (`decideRetry`,
 * src/api/backoff.ts); p-retry runs the loop, and the wait between attempts is the one that
 * policy names: the server's (Retry-After, or "retry after Ns" in a 429) or capped full-jitter
 * backoff with the server's hint as a floor.
 *
 * | error                                                | here                                  |
 * |------------------------------------------------------|---------------------------------------|
 * | RateLimitedError (429)                               | wait `retryAfterMs` (or 5 s), again   |
 * | TimeoutError, ServerError, NetworkError, BadResponse | backoff, again                        |
 * | anything else (400, 401, 402, 403, 404, ...)         | thrown at once                        |
 *
 * Every retry spends an attempt (a 429 too: there is no queue to hold the call), and a wait
 * longer than `maxWaitMs` ends the retries with the error that asked for it.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import pRetry from 'p-retry';
import { decideRetry } from './backoff.ts';
import type { ApiError } from './errors.ts';

export interface RetryOptions {
  /** Calls in total, the first one included. Default 4. */
  maxAttempts?: number;
  /** Backoff before the first retry, before jitter, in ms. Default 500. */
  baseDelayMs?: number;
  /** Largest backoff before jitter, in ms. Default 8000. */
  maxDelayMs?: number;
  /**
   * Longest wait honoured, in ms: a server that asks for more ends the retries (the command
   * fails with its message instead of hanging). Default 60000.
   */
  maxWaitMs?: number;
  /** Source of jitter in [0, 1). Default `Math.random`. */
  random?: () => number;
  /** Stops waiting and calling; the call in flight gets the signal too. */
  signal?: AbortSignal;
  /** Told before each wait, e.g. to say on stderr that a retry is coming. */
  onRetry?: (retry: RetryNotice) => void;
}

export interface RetryNotice {
  error: ApiError;
  /** The attempt that failed, from 1. */
  attempt: number;
  maxAttempts: number;
  /** How long until the next attempt, in ms. */
  waitMs: number;
}

export const RETRY_DEFAULTS = {
  maxAttempts: 4,
  baseDelayMs: 500,
  maxDelayMs: 8000,
  maxWaitMs: 60_000,
} as const;

/**
 * The wait before the attempt after `attemptsMade` failed ones, in ms; undefined when the
 * error is not worth another call, the attempts are used up, or the wait is over `maxWaitMs`.
 * Pure.
 */
export function retryWaitMs(
  error: unknown,
  attemptsMade: number,
  options: RetryOptions & { random: () => number },
): number | undefined {
  const maxAttempts = options.maxAttempts ?? RETRY_DEFAULTS.maxAttempts;
  if (attemptsMade >= maxAttempts) return undefined;
  const decision = decideRetry({
    error,
    attemptsMade,
    maxAttempts,
    random: options.random,
    baseDelayMs: options.baseDelayMs ?? RETRY_DEFAULTS.baseDelayMs,
    maxDelayMs: options.maxDelayMs ?? RETRY_DEFAULTS.maxDelayMs,
  });
  const waitMs =
    decision.kind === 'rate-limit'
      ? decision.waitMs
      : decision.kind === 'retry'
        ? decision.delayMs
        : undefined;
  if (waitMs === undefined || waitMs > (options.maxWaitMs ?? RETRY_DEFAULTS.maxWaitMs)) {
    return undefined;
  }
  return waitMs;
}

/**
 * Calls `call` until it succeeds, or the error is not retryable, or the attempts are used up;
 * throws the last error as it came (an ApiError keeps its class and code).
 */
export function withRetry<T>(
  call: (signal: AbortSignal | undefined) => Promise<T>,
  options: RetryOptions = {},
): Promise<T> {
  const random = options.random ?? Math.random;
  const maxAttempts = options.maxAttempts ?? RETRY_DEFAULTS.maxAttempts;
  return pRetry(() => call(options.signal), {
    retries: maxAttempts - 1,
    // p-retry's own delay is zero: the wait is the policy's, taken in shouldRetry below.
    minTimeout: 0,
    factor: 1,
    randomize: false,
    signal: options.signal,
    shouldRetry: async ({ error, attemptNumber }) => {
      const waitMs = retryWaitMs(error, attemptNumber, { ...options, random });
      if (waitMs === undefined) return false;
      options.onRetry?.({ error: error as ApiError, attempt: attemptNumber, maxAttempts, waitMs });
      await sleep(waitMs, undefined, options.signal ? { signal: options.signal } : undefined).catch(
        (error: unknown) => {
          // An abort ends the retries with the signal's own reason, as p-retry does.
          options.signal?.throwIfAborted();
          throw error;
        },
      );
      return true;
    },
  });
}
