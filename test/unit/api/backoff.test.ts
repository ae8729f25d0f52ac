import { describe, expect, it } from 'vitest';
import {
  backoffDelayMs,
  DEFAULT_RATE_LIMIT_WAIT_MS,
  decideRetry,
  isRetryable,
  STORE_JOB_ATTEMPTS,
  storeRetryDelayMs,
} from '../../../src/api/backoff.ts';
import {
  type ApiError,
  BadRequestError,
  BadResponseError,
  ForbiddenError,
  NetworkError,
  NotFoundError,
  PaymentRequiredError,
  RateLimitedError,
  ServerError,
  TimeoutError,
  UnauthorizedError,
} from '../../../src/api/errors.ts';
import { HarvestError } from '../../../src/errors.ts';

const half = () => 0.5;
const base = { attemptsMade: 1, maxAttempts: 5, random: half };

const ERRORS: Array<[ApiError, string, boolean]> = [
  [new RateLimitedError('HTTP 429', { status: 429 }), 'rate-limit', true],
  [new TimeoutError('HTTP 408', { status: 408 }), 'retry', true],
  [new TimeoutError('client timeout'), 'retry', true],
  [new ServerError('HTTP 500', { status: 500, serviceCode: 'UNKNOWN_ERROR' }), 'retry', true],
  [new NetworkError('reset'), 'retry', true],
  [new BadResponseError('malformed JSON', { status: 200 }), 'retry', true],
  [new BadRequestError('HTTP 400', { status: 400 }), 'fail', false],
  [new ForbiddenError('HTTP 403', { status: 403 }), 'fail', false],
  [new NotFoundError('HTTP 404', { status: 404 }), 'fail', false],
  [new UnauthorizedError('HTTP 401', { status: 401 }), 'pause', false],
  [new PaymentRequiredError('HTTP 402', { status: 402 }), 'pause', false],
];

describe('decideRetry', () => {
  it.each(ERRORS)('%o -> %s', (error, kind, retryable) => {
    const decision = decideRetry({ ...base, error });
    expect(decision.kind).toBe(kind);
    expect(isRetryable(error)).toBe(retryable);
    if (decision.kind === 'fail' || decision.kind === 'pause')
      expect(decision.code).toBe(error.code);
  });

  it('fails an unknown error with a generic code, and a HarvestError with its own', () => {
    expect(decideRetry({ ...base, error: new TypeError('x is undefined') })).toEqual({
      kind: 'fail',
      code: 'UNEXPECTED_ERROR',
      message: 'x is undefined',
    });
    expect(decideRetry({ ...base, error: 'just a string' })).toMatchObject({
      kind: 'fail',
      code: 'UNEXPECTED_ERROR',
    });
    expect(decideRetry({ ...base, error: new HarvestError('BUDGET', 'over budget') })).toEqual({
      kind: 'fail',
      code: 'BUDGET',
      message: 'over budget',
    });
    expect(isRetryable(new Error('x'))).toBe(false);
  });

  it('waits the Retry-After of a 429, or a documented default, without looking at attempts', () => {
    const hinted = new RateLimitedError('429', { retryAfterMs: 27_000 });
    expect(decideRetry({ ...base, attemptsMade: 5, error: hinted })).toEqual({
      kind: 'rate-limit',
      waitMs: 27_000,
    });
    const bare = new RateLimitedError('429');
    expect(decideRetry({ ...base, attemptsMade: 99, error: bare })).toEqual({
      kind: 'rate-limit',
      waitMs: DEFAULT_RATE_LIMIT_WAIT_MS,
    });
    expect(decideRetry({ ...base, error: bare, defaultRateLimitWaitMs: 750 })).toEqual({
      kind: 'rate-limit',
      waitMs: 750,
    });
  });

  it('retries while attempts remain, then fails with the error code', () => {
    const error = new ServerError('HTTP 500 UNKNOWN_ERROR: oops', { status: 500 });
    expect(decideRetry({ ...base, error, attemptsMade: 4, maxAttempts: 5 }).kind).toBe('retry');
    expect(decideRetry({ ...base, error, attemptsMade: 5, maxAttempts: 5 })).toEqual({
      kind: 'fail',
      code: 'SERVER_ERROR',
      message: 'HTTP 500 UNKNOWN_ERROR: oops (gave up after 5 attempts)',
    });
    expect(decideRetry({ ...base, error, attemptsMade: 1, maxAttempts: 1 })).toMatchObject({
      kind: 'fail',
      message: 'HTTP 500 UNKNOWN_ERROR: oops (gave up after 1 attempt)',
    });
  });

  it('says what to do in a pause reason, naming the run', () => {
    const auth = decideRetry({
      ...base,
      runId: 'r42',
      error: new UnauthorizedError('HTTP 401: Unauthorized: Invalid token'),
    });
    expect(auth).toEqual({
      kind: 'pause',
      code: 'UNAUTHORIZED',
      reason:
        'The API rejected the key (HTTP 401: Unauthorized: Invalid token). Check HARVEST_API_KEY, then run `harvest run --resume r42`.',
    });
    const credits = decideRetry({ ...base, error: new PaymentRequiredError('HTTP 402: no') });
    expect(credits.kind === 'pause' && credits.reason).toContain('Add credits');
    expect(credits.kind === 'pause' && credits.reason).toContain('harvest run --resume RUN');
  });

  it('grows the delay exponentially: random() * base * 2^(attempt-1)', () => {
    const error = new NetworkError('reset');
    const delays = [1, 2, 3, 4, 5].map((attemptsMade) => {
      const d = decideRetry({ error, attemptsMade, maxAttempts: 10, random: () => 0.5 });
      return d.kind === 'retry' ? d.delayMs : -1;
    });
    expect(delays).toEqual([500, 1000, 2000, 4000, 8000]);
  });

  it('uses baseDelayMs and caps at maxDelayMs', () => {
    const error = new TimeoutError('t');
    const at = (attemptsMade: number) =>
      decideRetry({
        error,
        attemptsMade,
        maxAttempts: 100,
        random: () => 0.999_999,
        baseDelayMs: 200,
        maxDelayMs: 5_000,
      });
    expect(at(1)).toEqual({ kind: 'retry', delayMs: 200 });
    expect(at(5)).toEqual({ kind: 'retry', delayMs: 3_200 });
    expect(at(6)).toEqual({ kind: 'retry', delayMs: 5_000 });
    expect(at(99)).toEqual({ kind: 'retry', delayMs: 5_000 });
  });

  it('keeps the delay within [0, min(max, base * 2^(n-1))] for any random value', () => {
    for (let attemptsMade = 1; attemptsMade <= 40; attemptsMade++) {
      const ceiling = Math.min(60_000, 1000 * 2 ** (attemptsMade - 1));
      for (const r of [0, 0.1, 0.5, 0.9, 0.999_999, 1, -1, 2, Number.NaN]) {
        const d = backoffDelayMs({ attemptsMade, random: () => r });
        expect(d).toBeGreaterThanOrEqual(0);
        expect(d).toBeLessThanOrEqual(ceiling);
        expect(Number.isInteger(d)).toBe(true);
      }
    }
    expect(backoffDelayMs({ attemptsMade: 3, random: () => 0 })).toBe(0);
  });

  it('treats attemptsMade below 1 as the first attempt', () => {
    expect(backoffDelayMs({ attemptsMade: 0, random: () => 1 })).toBe(1000);
  });

  it('uses a Retry-After hint as a floor, even above maxDelayMs', () => {
    const hint = (retryAfterMs: number) =>
      decideRetry({
        error: new ServerError('503', { status: 503, retryAfterMs }),
        attemptsMade: 3,
        maxAttempts: 5,
        random: () => 0.5,
      });
    expect(hint(100)).toEqual({ kind: 'retry', delayMs: 2_000 });
    expect(hint(3_000)).toEqual({ kind: 'retry', delayMs: 3_000 });
    expect(hint(120_000)).toEqual({ kind: 'retry', delayMs: 120_000 });
  });
});

describe('storeRetryDelayMs', () => {
  it('doubles from 1 s up to a minute, with full jitter', () => {
    const top = () => 1;
    expect([1, 2, 3, 7, 8, 50].map((n) => storeRetryDelayMs(n, top))).toEqual([
      1000, 2000, 4000, 60_000, 60_000, 60_000,
    ]);
    expect(storeRetryDelayMs(3, half)).toBe(2000);
    expect(storeRetryDelayMs(3, () => 0)).toBe(0);
  });

  it('keeps a batch of events retrying for over an hour on average', () => {
    let expectedMs = 0;
    for (let n = 1; n < STORE_JOB_ATTEMPTS; n++) expectedMs += storeRetryDelayMs(n, half);
    expect(expectedMs).toBeGreaterThan(60 * 60_000);
  });
});
