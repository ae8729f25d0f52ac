import { describe, expect, it } from 'vitest';
import { classifyTransportError } from '../../../src/api/classify.ts';
import {
  BadRequestError,
  BadResponseError,
  NetworkError,
  RateLimitedError,
  ServerError,
  TimeoutError,
  UnauthorizedError,
} from '../../../src/api/errors.ts';
import {
  describeOutage,
  failureClass,
  isHealthyStatus,
  probeDelayMs,
} from '../../../src/api/outage.ts';

function systemError(code: string, message = code): Error {
  return Object.assign(new Error(message), { code });
}

describe('failureClass', () => {
  it('no connection at all is unreachable: refused, DNS, host unreachable, connect timeout', () => {
    for (const code of [
      'ECONNREFUSED',
      'ENOTFOUND',
      'EAI_AGAIN',
      'EHOSTUNREACH',
      'UND_ERR_CONNECT_TIMEOUT',
    ]) {
      expect([code, failureClass(classifyTransportError(systemError(code)))]).toEqual([
        code,
        'unreachable',
      ]);
    }
  });

  it('a TLS failure is unreachable, found in the cause chain', () => {
    const tls = new TypeError('fetch failed', {
      cause: systemError('ERR_TLS_CERT_ALTNAME_INVALID'),
    });
    expect(failureClass(classifyTransportError(tls))).toBe('unreachable');
    const expired = new NetworkError('x', { cause: systemError('CERT_HAS_EXPIRED') });
    expect(failureClass(expired)).toBe('unreachable');
  });

  it('5xx, 408, the client timeout and a connection lost mid-answer are flaky', () => {
    expect(failureClass(new ServerError('HTTP 502', { status: 502 }))).toBe('flaky');
    expect(failureClass(new TimeoutError('HTTP 408', { status: 408 }))).toBe('flaky');
    expect(failureClass(new TimeoutError('no response'))).toBe('flaky');
    expect(failureClass(classifyTransportError(systemError('ECONNRESET')))).toBe('flaky');
    expect(failureClass(classifyTransportError(systemError('UND_ERR_SOCKET')))).toBe('flaky');
  });

  it('any other HTTP answer, or any other failure, is no outage', () => {
    expect(failureClass(new RateLimitedError('HTTP 429', { status: 429 }))).toBe('other');
    expect(failureClass(new UnauthorizedError('HTTP 401', { status: 401 }))).toBe('other');
    expect(failureClass(new BadRequestError('HTTP 400', { status: 400 }))).toBe('other');
    expect(failureClass(new BadResponseError('bad JSON', { status: 200 }))).toBe('other');
    expect(failureClass(new Error('a bug'))).toBe('other');
  });

  it('healthy statuses are those below 500 but 408', () => {
    expect([200, 401, 429, 408, 500, 503].map(isHealthyStatus)).toEqual([
      true,
      true,
      true,
      false,
      false,
      false,
    ]);
  });
});

describe('probeDelayMs', () => {
  const backoff = { baseMs: 1000, maxMs: 180_000 };
  const top = () => 1;

  it('doubles from the base after each failed probe, capped', () => {
    const delays = [0, 1, 2, 3, 7, 8, 20, 1000].map((n) => probeDelayMs(n, backoff, top));
    expect(delays).toEqual([1000, 2000, 4000, 8000, 128_000, 180_000, 180_000, 180_000]);
  });

  it('keeps 80 to 100 % of the step, never less than 1 ms', () => {
    expect(probeDelayMs(3, backoff, () => 0)).toBe(6400);
    expect(probeDelayMs(3, backoff, () => 0.5)).toBe(7200);
    expect(probeDelayMs(3, backoff, () => 7)).toBe(8000);
    expect(probeDelayMs(0, { baseMs: 1, maxMs: 1 }, () => 0)).toBe(1);
  });
});

describe('describeOutage', () => {
  it('says since when, the next probe and the last error', () => {
    const since = new Date(2026, 11, 6, 9, 5, 0).getTime();
    const text = describeOutage(
      { since, nextProbeAt: since + 12_300, lastError: 'connection refused' },
      since + 1000,
    );
    expect(text).toBe(
      'API unreachable since 09:05, next probe in 12s (last error: connection refused)',
    );
  });

  it('a probe that is due says 0s; a long error is cut', () => {
    const text = describeOutage({ since: 0, nextProbeAt: 5, lastError: 'x'.repeat(500) }, 10);
    expect(text).toContain('next probe in 0s');
    expect(text).toContain(`${'x'.repeat(200)}...)`);
  });
});
