import { describe, expect, it } from 'vitest';
import { splitConcurrency } from '../../../jobs/pool.ts';

describe('splitConcurrency', () => {
  it('splits into near-equal slices of at most max that add up to the whole', () => {
    expect(splitConcurrency(16, 16)).toEqual([16]);
    expect(splitConcurrency(40, 16)).toEqual([14, 13, 13]);
    expect(splitConcurrency(256, 16)).toEqual(Array(16).fill(16));
    expect(splitConcurrency(3, 16)).toEqual([3]);
    for (let c = 1; c <= 300; c++) {
      const parts = splitConcurrency(c, 16);
      expect(parts.reduce((a, b) => a + b, 0)).toBe(c);
      expect(Math.max(...parts) - Math.min(...parts)).toBeLessThanOrEqual(1);
      expect(Math.max(...parts)).toBeLessThanOrEqual(16);
    }
  });

  it('gives at least one slot', () => {
    expect(splitConcurrency(0, 16)).toEqual([1]);
  });
});
