import { describe, expect, it } from 'vitest';
import {
  DECREASE_FACTOR,
  HEADROOM,
  INITIAL_RATE_STATE,
  MIN_RATE_PER_SEC,
  onLimited,
  onQuiet,
  QUIET_AFTER_DECREASE_MS,
  startingState,
} from '../../../../src/queue/rate/aimd.ts';

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
