import { describe, expect, it } from 'vitest';
import { allowedRatePerSec } from '../../../src/metrics/rate.ts';

describe('allowed rate read from the rate controller hash', () => {
  it('reads the AIMD state kept as JSON', () => {
    expect(allowedRatePerSec({ state: JSON.stringify({ ratePerSec: 8.5 }) })).toBe(8.5);
    expect(allowedRatePerSec({ state: JSON.stringify({ ratePerSec: null }) })).toBeNull();
    expect(allowedRatePerSec({})).toBeNull();
    expect(allowedRatePerSec({ state: 'not json' })).toBeNull();
  });

  it('reads a learned model: a limit per window, a pace, or nothing known', () => {
    expect(allowedRatePerSec({ regime: 'fixed', limit: '100', windowMs: '60000' })).toBeCloseTo(
      100 / 60,
    );
    expect(allowedRatePerSec({ regime: 'rolling', limit: '30', windowMs: '10000' })).toBe(3);
    expect(allowedRatePerSec({ regime: 'paced', pace: JSON.stringify({ ratePerSec: 2 }) })).toBe(2);
    expect(allowedRatePerSec({ regime: 'open', limit: '' })).toBeNull();
    expect(allowedRatePerSec({ regime: 'fixed', limit: '', windowMs: '60000' })).toBeNull();
  });
});
