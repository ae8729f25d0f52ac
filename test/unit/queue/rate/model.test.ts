import { describe, expect, it } from 'vitest';
import { DECREASE_FACTOR, HEADROOM } from '../../../../src/queue/rate/aimd.ts';
import {
  defaultGuardMs,
  type LimitedInput,
  learn,
  OPEN_MODEL,
  type RateModel,
} from '../../../../src/queue/rate/model.ts';
import type { RateLimitSignal } from '../../../../src/queue/rate/signal.ts';

const NOW = 1_800_000_000_000;
const at = (s: number) => NOW + s * 1000;

/** A hosted-style 429: `consumed` counted, nothing remains, the window resets in `resetS`. */
function windowSignal(limit: number, resetS: number, windowMs = 60_000): RateLimitSignal {
  return {
    limit,
    consumed: limit + 1,
    remaining: 0,
    windowMs,
    retryAfterMs: resetS * 1000,
    resetsAtMs: at(resetS),
  };
}

function input(signal: RateLimitSignal, extra: Partial<LimitedInput> = {}): LimitedInput {
  return { signal, fresh: true, nowMs: NOW, observedPerSec: 0, ...extra };
}

const fixed = (limit: number, endsInS: number): RateModel => ({
  ...OPEN_MODEL,
  regime: 'fixed',
  limit,
  windowEndsAt: at(endsInS),
  version: 7,
});
const rolling = (limit: number): RateModel => ({
  ...OPEN_MODEL,
  regime: 'rolling',
  limit,
  version: 7,
});

describe('learn, from nothing known', () => {
  it('a window-shaped 429: the limit, spent at once until the reset it names', () => {
    const { model, holdMs } = learn(OPEN_MODEL, input(windowSignal(1200, 56)));
    expect(model).toMatchObject({
      regime: 'fixed',
      limit: 1200,
      windowMs: 60_000,
      windowEndsAt: at(56.5),
      resetSlackMs: 500,
      aligned: false,
    });
    expect(holdMs).toBe(56_500);
    expect(model.version).toBeGreaterThanOrEqual(NOW);
  });

  it("a reset on the clock's minute: windows aligned to the clock, each one minute after the last", () => {
    // NOW is a whole minute: the window resets at NOW + 60 s, said as "retry after 57s".
    const signal = { ...windowSignal(1200, 57), resetsAtMs: at(60) };
    const { model, holdMs } = learn(OPEN_MODEL, input(signal, { nowMs: at(3) }));
    expect(model).toMatchObject({ regime: 'fixed', aligned: true, windowEndsAt: at(60.3) });
    expect(holdMs).toBe(57_300);
  });

  it('takes the window from the signal (the sandbox names short ones), and its guard', () => {
    const { model } = learn(OPEN_MODEL, input(windowSignal(10, 2, 2000)));
    expect(model).toMatchObject({ regime: 'fixed', limit: 10, windowMs: 2000, guardMs: 250 });
  });

  it('a refill (wait far shorter than the reset): paced just under limit / window', () => {
    const signal = { ...windowSignal(1200, 1), resetsAtMs: at(59) };
    const { model, holdMs } = learn(OPEN_MODEL, input(signal));
    expect(model.regime).toBe('paced');
    expect(model.pace.ratePerSec).toBeCloseTo(20 * HEADROOM);
    expect(model.pace.ceilingPerSec).toBeCloseTo(20 * HEADROOM);
    expect(holdMs).toBe(1000);
  });

  it('counts without a usable reset: rolling, safe whatever the service does', () => {
    const { model, holdMs } = learn(OPEN_MODEL, input({ limit: 100, retryAfterMs: 8000 }));
    expect(model).toMatchObject({ regime: 'rolling', limit: 100 });
    expect(holdMs).toBe(8000);
  });

  it('no counts (keyless retry_after_seconds): AIMD from the rate seen', () => {
    const { model, holdMs } = learn(
      OPEN_MODEL,
      input({ retryAfterMs: 3000 }, { observedPerSec: 50 }),
    );
    expect(model.regime).toBe('paced');
    expect(model.pace.ratePerSec).toBeCloseTo(50 * DECREASE_FACTOR);
    expect(holdMs).toBe(3000);
  });

  it('something remaining: not the rate; only the wait is honoured', () => {
    const lesson = learn(OPEN_MODEL, input({ consumed: 40, remaining: 60, retryAfterMs: 1000 }));
    expect(lesson).toEqual({ model: OPEN_MODEL, holdMs: 1000 });
  });
});

describe('learn, with a model', () => {
  it('answers to calls admitted under an older model only lower the limit', () => {
    const model = fixed(1200, 50);
    // The hosted service counts refused calls: later answers of a wave name a higher count.
    const later = learn(model, input(windowSignal(1203, 50), { fresh: false }));
    expect(later).toEqual({ model, holdMs: 50_000 });
    const lower = learn(model, input(windowSignal(1100, 50), { fresh: false }));
    expect(lower.model).toMatchObject({ regime: 'fixed', limit: 1100, windowEndsAt: at(50) });
  });

  it('fixed, then a lower limit in the same kind of window: a plan change', () => {
    const { model, holdMs } = learn(fixed(1200, 0), input(windowSignal(600, 58)));
    expect(model).toMatchObject({ regime: 'fixed', limit: 600, windowEndsAt: at(58.5) });
    expect(holdMs).toBe(58_500);
  });

  it('fixed, then a 429 it cannot explain: not a fixed window; rolling', () => {
    // A sliding log refuses a burst that outruns the calls leaving it: "retry after 1s".
    const signal = { ...windowSignal(1200, 1), resetsAtMs: at(0.2) };
    const { model, holdMs } = learn(fixed(1200, 0), input(signal));
    expect(model).toMatchObject({ regime: 'rolling', limit: 1200 });
    expect(holdMs).toBe(1000);
  });

  it('rolling: a lower limit is taken', () => {
    expect(learn(rolling(1200), input(windowSignal(600, 1))).model.limit).toBe(600);
  });

  it('rolling: refused with a slot free at once, calls came too late: the guard widens', () => {
    const { model } = learn(rolling(1200), input(windowSignal(1200, 1)));
    expect(model).toMatchObject({ limit: 1200, guardMs: 600 });
    // Up to a twentieth of the window; then the limit goes down.
    const wide = { ...rolling(1200), guardMs: 3000 };
    expect(learn(wide, input(windowSignal(1200, 1))).model.limit).toBe(
      Math.floor(1200 * DECREASE_FACTOR),
    );
  });

  it('rolling: refused for long at the same count: fewer are allowed; the limit decreases', () => {
    const { model } = learn(rolling(1200), input(windowSignal(1200, 40)));
    expect(model).toMatchObject({ limit: Math.floor(1200 * DECREASE_FACTOR), guardMs: 300 });
  });

  it('paced at a known rate, refused again: decreases, and the ceiling stays the limit', () => {
    const bucket = { ...windowSignal(1200, 1), resetsAtMs: at(59) };
    const first = learn(OPEN_MODEL, input(bucket)).model;
    const { model } = learn(first, input(bucket, { nowMs: at(30) }));
    expect(model.pace.ratePerSec).toBeCloseTo(20 * HEADROOM * DECREASE_FACTOR);
    expect(model.pace.ceilingPerSec).toBeCloseTo(20 * HEADROOM);
  });

  it('a known limit, then a 429 without counts: paced below it', () => {
    const { model } = learn(rolling(600), input({ retryAfterMs: 2000 }));
    expect(model.regime).toBe('paced');
    expect(model.pace.ratePerSec).toBeCloseTo(10 * HEADROOM * DECREASE_FACTOR);
  });

  it('every lesson has a newer version', () => {
    const model = fixed(1200, 0);
    const after = learn(model, input(windowSignal(600, 58), { nowMs: 5 })).model;
    expect(after.version).toBe(8);
  });
});

describe('guardMs', () => {
  it('the guard after a window: 0.5%, between 250 ms and 1 s', () => {
    expect(defaultGuardMs(60_000)).toBe(300);
    expect(defaultGuardMs(2000)).toBe(250);
    expect(defaultGuardMs(3_600_000)).toBe(1000);
  });
});
