import { describe, expect, it } from 'vitest';
import {
  DECREASE_FACTOR,
  HEADROOM,
  INITIAL_RATE_STATE,
  limitFromMessage,
  MIN_RATE_PER_SEC,
  onLimited,
  onQuiet,
  QUIET_AFTER_DECREASE_MS,
  startingState,
  toLimiter,
} from '../../../src/queue/rate.ts';

const HOSTED_429 =
  'Rate limit exceeded. Consumed (req/min): 101, Remaining (req/min): 0. Upgrade your plan at https://firecrawl.dev/pricing for increased rate limits or please retry after 27s, resets at Sun Nov 22 2026 10:15:00 GMT+0000 (Coordinated Universal Time)';

describe('limitFromMessage', () => {
  it('reads the plan limit from the hosted 429 text (the rejected request is counted)', () => {
    expect(limitFromMessage(HOSTED_429)).toBe(100);
  });
  it('adds what remains when something remains (a concurrency 429)', () => {
    expect(limitFromMessage('Consumed (req/min): 40, Remaining (req/min): 60.')).toBe(100);
  });
  it('is undefined without the counts', () => {
    expect(limitFromMessage('Rate limit exceeded, retry later')).toBeUndefined();
    expect(limitFromMessage('Consumed (req/min): 1, Remaining (req/min): 0')).toBeUndefined();
  });
});

describe('startingState', () => {
  it('is unbounded without a known limit', () => {
    expect(startingState(undefined)).toEqual(INITIAL_RATE_STATE);
  });
  it('starts just under a known plan limit, which is also the ceiling', () => {
    const s = startingState(1200);
    expect(s.ratePerSec).toBeCloseTo(20 * HEADROOM);
    expect(s.ceilingPerSec).toBe(s.ratePerSec);
  });
});

describe('onLimited', () => {
  it('jumps to the limit the message reveals when unbounded', () => {
    const s = onLimited(
      INITIAL_RATE_STATE,
      { waitMs: 27_000, limitPerMinute: 1200, observedPerSec: 500 },
      1000,
    );
    expect(s.ratePerSec).toBeCloseTo(20 * HEADROOM);
    expect(s.ceilingPerSec).toBeCloseTo(20 * HEADROOM);
    expect(s.lastDecreaseAt).toBe(1000);
  });
  it('decreases multiplicatively from the observed rate without a hint', () => {
    const s = onLimited(INITIAL_RATE_STATE, { waitMs: 1000, observedPerSec: 50 }, 1000);
    expect(s.ratePerSec).toBeCloseTo(50 * DECREASE_FACTOR);
    expect(s.ceilingPerSec).toBeNull();
  });
  it('decreases once per wave: answers to requests already in flight change nothing', () => {
    const first = onLimited(startingState(600), { waitMs: 5000, observedPerSec: 10 }, 10_000);
    const second = onLimited(first, { waitMs: 5000, observedPerSec: 10 }, 12_000);
    expect(second).toBe(first);
    const next = onLimited(first, { waitMs: 5000, observedPerSec: 10 }, 15_001);
    expect(next.ratePerSec).toBeCloseTo(first.ratePerSec! * DECREASE_FACTOR);
  });
  it('within a wave, keeps the lowest limit the answers reveal', () => {
    const ev = (limitPerMinute: number) => ({ waitMs: 30_000, limitPerMinute, observedPerSec: 0 });
    const first = onLimited(INITIAL_RATE_STATE, ev(1207), 1000);
    const lower = onLimited(first, ev(1200), 1100);
    expect(lower.ratePerSec).toBeCloseTo(20 * HEADROOM);
    expect(lower.ceilingPerSec).toBeCloseTo(20 * HEADROOM);
    expect(onLimited(lower, ev(1210), 1200)).toBe(lower);
  });
  it('never goes below the floor', () => {
    let s = startingState(60);
    for (let i = 1; i < 40; i++) s = onLimited(s, { waitMs: 1000, observedPerSec: 0 }, i * 2000);
    expect(s.ratePerSec).toBe(MIN_RATE_PER_SEC);
  });
});

describe('onQuiet', () => {
  const limited = onLimited(INITIAL_RATE_STATE, { waitMs: 1000, observedPerSec: 10 }, 1);
  it('waits for a quiet spell after a decrease', () => {
    expect(onQuiet(limited, QUIET_AFTER_DECREASE_MS)).toBe(limited);
  });
  it('then increases additively', () => {
    const s = onQuiet(limited, QUIET_AFTER_DECREASE_MS + 1);
    expect(s.ratePerSec).toBeCloseTo(limited.ratePerSec! + 0.5);
  });
  it('never passes the ceiling', () => {
    const atCeiling = startingState(1200);
    expect(onQuiet(atCeiling, 1e9)).toBe(atCeiling);
  });
  it('leaves an unbounded state alone', () => {
    expect(onQuiet(INITIAL_RATE_STATE, 1e9)).toBe(INITIAL_RATE_STATE);
  });
});

describe('toLimiter', () => {
  it('counts per two-second window at ordinary rates', () => {
    expect(toLimiter(19.4)).toEqual({ max: 38, durationMs: 2000 });
    expect(toLimiter(0.5)).toEqual({ max: 1, durationMs: 2000 });
  });
  it('stretches the window below one request per two seconds', () => {
    expect(toLimiter(0.2)).toEqual({ max: 1, durationMs: 5000 });
  });
});
