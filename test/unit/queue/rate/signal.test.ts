import { describe, expect, it } from 'vitest';
import { rateLimitMessage } from '../../../../src/contract/index.ts';
import { readRateLimitSignal, resetOf, windowFromUnit } from '../../../../src/queue/rate/signal.ts';

const NOW = Date.parse('2026-11-22T10:14:33Z');
const HOSTED_429 =
  'Rate limit exceeded. Consumed (req/min): 101, Remaining (req/min): 0. Upgrade your plan at https://firecrawl.dev/pricing for increased rate limits or please retry after 27s, resets at Sun Nov 22 2026 10:15:00 GMT+0000 (Coordinated Universal Time)';

describe('readRateLimitSignal', () => {
  it('reads everything the hosted 429 says (the refused request is counted)', () => {
    expect(readRateLimitSignal(`POST /v2/search: HTTP 429: ${HOSTED_429}`, 27_000)).toEqual({
      limit: 100,
      consumed: 101,
      remaining: 0,
      windowMs: 60_000,
      retryAfterMs: 27_000,
      resetsAtMs: Date.parse('2026-11-22T10:15:00Z'),
    });
  });

  it('reads the window from the unit, as the sandbox names short ones', () => {
    const text = rateLimitMessage({
      consumed: 11,
      remaining: 0,
      retryAfterS: 2,
      resetsAt: new Date(NOW + 2000),
      windowMs: 2000,
    });
    expect(readRateLimitSignal(text, 2000)).toMatchObject({ limit: 10, windowMs: 2000 });
    expect(windowFromUnit('min')).toBe(60_000);
    expect(windowFromUnit('500ms')).toBe(500);
    expect(windowFromUnit('h')).toBe(3_600_000);
    expect(windowFromUnit('fortnight')).toBeUndefined();
  });

  it('learns no limit when something remains: it was not the rate that ran out', () => {
    const signal = readRateLimitSignal('Consumed (req/min): 40, Remaining (req/min): 60.', 1000);
    expect(signal.limit).toBeUndefined();
    expect(signal.remaining).toBe(60);
  });

  it('has only the wait when the service says no more (keyless retry_after_seconds)', () => {
    expect(readRateLimitSignal('Too many requests', 3000)).toEqual({ retryAfterMs: 3000 });
    expect(readRateLimitSignal('Too many requests', undefined)).toEqual({});
  });

  it('reads a reset date without a zone as GMT', () => {
    const tz = process.env.TZ;
    process.env.TZ = 'America/New_York';
    try {
      const signal = readRateLimitSignal('resets at Sun Nov 22 2026 10:15:00', undefined);
      expect(signal.resetsAtMs).toBe(Date.parse('2026-11-22T10:15:00Z'));
    } finally {
      if (tz === undefined) delete process.env.TZ;
      else process.env.TZ = tz;
    }
  });
});

describe('resetOf', () => {
  const at = (s: number) => NOW + s * 1000;
  it('a window: wait and reset agree; the tighter upper bound of the two', () => {
    const signal = { retryAfterMs: 27_000, resetsAtMs: at(27) };
    // "retry after" may be rounded to nearest: +0.5 s; "resets at" drops the ms: +1 s.
    expect(resetOf(signal, NOW)).toEqual({ shape: 'window', atMs: at(27.5), earliestMs: at(27) });
    expect(resetOf({ retryAfterMs: 27_000, resetsAtMs: at(26) }, NOW)).toEqual({
      shape: 'window',
      atMs: at(27),
      earliestMs: at(26),
    });
  });

  it('a window whatever the rounding: "retry after" rounded up, the date truncated, read late', () => {
    // At 0 the window had 1.999 s left: "retry after 2s, resets at <second 1>"; read at 0.9 s.
    const signal = { retryAfterMs: 2000, resetsAtMs: at(1) };
    expect(resetOf(signal, at(0.9))).toMatchObject({ shape: 'window', atMs: at(2) });
  });

  it("a window whose end falls on the clock's window, when the window length is known", () => {
    const minute = Date.parse('2026-11-22T10:15:00Z');
    const signal = { retryAfterMs: 27_000, resetsAtMs: minute };
    expect(resetOf(signal, NOW, 60_000)).toMatchObject({ shape: 'window', alignedAtMs: minute });
    // 10:15:01 is no multiple of a minute.
    const off = { retryAfterMs: 28_000, resetsAtMs: minute + 1000 };
    expect(resetOf(off, NOW, 60_000).alignedAtMs).toBeUndefined();
    expect(resetOf(signal, NOW).alignedAtMs).toBeUndefined();
  });

  it('a refill: the wait is much shorter than the reset (a token bucket)', () => {
    expect(resetOf({ retryAfterMs: 1000, resetsAtMs: at(59) }, NOW)).toEqual({
      shape: 'refill',
      atMs: at(1.5),
    });
  });

  it('unknown: no reset, or a reset before the wait ends (the clocks disagree)', () => {
    expect(resetOf({ retryAfterMs: 5000 }, NOW)).toEqual({ shape: 'unknown', atMs: at(5.5) });
    expect(resetOf({ retryAfterMs: 30_000, resetsAtMs: at(-3600) }, NOW).shape).toBe('unknown');
    expect(resetOf({}, NOW)).toEqual({ shape: 'unknown' });
  });
});
