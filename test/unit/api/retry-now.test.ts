import { describe, expect, it } from 'vitest';
import {
  BadRequestError,
  NetworkError,
  NotFoundError,
  PaymentRequiredError,
  RateLimitedError,
  ServerError,
  TimeoutError,
  UnauthorizedError,
} from '../../../src/api/errors.ts';
import { RETRY_DEFAULTS, retryWaitMs, withRetry } from '../../../src/api/retry-now.ts';

const top = () => 0.999_999;

describe('retryWaitMs', () => {
  it("waits the server's time after a 429, and 5 s when it named none", () => {
    const hinted = new RateLimitedError('429', { status: 429, retryAfterMs: 27_000 });
    expect(retryWaitMs(hinted, 1, { random: top })).toBe(27_000);
    expect(retryWaitMs(new RateLimitedError('429'), 1, { random: top })).toBe(5000);
  });

  it('backs off exponentially, capped, with full jitter, on 408, 5xx and network faults', () => {
    for (const error of [new TimeoutError('t'), new ServerError('s'), new NetworkError('n')]) {
      expect(retryWaitMs(error, 1, { random: top })).toBe(500);
      expect(retryWaitMs(error, 2, { random: top })).toBe(1000);
      expect(retryWaitMs(error, 3, { random: top })).toBe(2000);
      expect(retryWaitMs(error, 3, { random: () => 0.25 })).toBe(500);
      expect(retryWaitMs(error, 9, { random: top, maxAttempts: 20 })).toBe(8000);
    }
    // a Retry-After on a 503 is a floor under the jitter
    const busy = new ServerError('503', { status: 503, retryAfterMs: 3000 });
    expect(retryWaitMs(busy, 1, { random: () => 0 })).toBe(3000);
  });

  it('gives up once the attempts are used up', () => {
    const error = new ServerError('s');
    expect(retryWaitMs(error, RETRY_DEFAULTS.maxAttempts - 1, { random: top })).toBeDefined();
    expect(retryWaitMs(error, RETRY_DEFAULTS.maxAttempts, { random: top })).toBeUndefined();
    expect(retryWaitMs(new RateLimitedError('429'), 2, { random: top, maxAttempts: 2 })).toBe(
      undefined,
    );
  });

  it('never retries what another call cannot fix', () => {
    for (const error of [
      new BadRequestError('400'),
      new UnauthorizedError('401'),
      new PaymentRequiredError('402'),
      new NotFoundError('404'),
      new Error('a bug'),
    ]) {
      expect(retryWaitMs(error, 1, { random: top })).toBeUndefined();
    }
  });

  it('does not honour a wait longer than maxWaitMs', () => {
    const error = new RateLimitedError('429', { retryAfterMs: 61_000 });
    expect(retryWaitMs(error, 1, { random: top })).toBeUndefined();
    expect(retryWaitMs(error, 1, { random: top, maxWaitMs: 120_000 })).toBe(61_000);
  });
});

describe('withRetry', () => {
  it('calls again after a retryable failure, saying so first, and returns the answer', async () => {
    const notices: number[] = [];
    let calls = 0;
    const value = await withRetry(
      async () => {
        calls += 1;
        if (calls < 3) throw new ServerError(`fail ${calls}`);
        return 'ok';
      },
      { baseDelayMs: 1, random: top, onRetry: (n) => notices.push(n.attempt) },
    );
    expect(value).toBe('ok');
    expect(calls).toBe(3);
    expect(notices).toEqual([1, 2]);
  });

  it('throws the last error as it came, of its own class', async () => {
    let calls = 0;
    const error = await withRetry(
      async () => {
        calls += 1;
        throw new BadRequestError('bad');
      },
      { baseDelayMs: 1 },
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BadRequestError);
    expect(calls).toBe(1);
    const spent = await withRetry(
      async () => {
        throw new TimeoutError('slow');
      },
      { baseDelayMs: 1, maxAttempts: 3 },
    ).catch((e: unknown) => e);
    expect(spent).toBeInstanceOf(TimeoutError);
  });

  it('stops waiting when its signal aborts', async () => {
    const controller = new AbortController();
    const started = Date.now();
    const pending = withRetry(
      async () => {
        throw new RateLimitedError('429', { retryAfterMs: 30_000 });
      },
      { signal: controller.signal, onRetry: () => controller.abort(new Error('stop')) },
    );
    await expect(pending).rejects.toThrow('stop');
    expect(Date.now() - started).toBeLessThan(5000);
  });
});
