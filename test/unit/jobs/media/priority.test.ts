import { describe, expect, it } from 'vitest';
import {
  deadlinePriority,
  PRIORITY_MAX,
  PRIORITY_STEP_MS,
} from '../../../../jobs/media/priority.ts';

const ANCHOR = Date.UTC(2026, 10, 22, 9);

describe('deadlinePriority', () => {
  it('ranks earlier deadlines first, in steps of 100 ms', () => {
    const audio = deadlinePriority(ANCHOR + 3_600_000 + 3_240_000, ANCHOR);
    const screenshot = deadlinePriority(ANCHOR + 3_600_000 + 86_100_000, ANCHOR);
    expect(audio).toBeLessThan(screenshot);
    expect(deadlinePriority(ANCHOR + 1000, ANCHOR)).toBe(11);
    expect(deadlinePriority(ANCHOR + 1099, ANCHOR)).toBe(11);
    expect(deadlinePriority(ANCHOR + 1100, ANCHOR)).toBe(12);
    expect(PRIORITY_STEP_MS).toBe(100);
  });

  it('stays within what BullMQ accepts: past deadlines first, the far future last', () => {
    expect(deadlinePriority(ANCHOR - 5_000_000, ANCHOR)).toBe(1);
    expect(deadlinePriority(ANCHOR, ANCHOR)).toBe(1);
    expect(deadlinePriority(ANCHOR + 7 * 86_400_000, ANCHOR)).toBe(PRIORITY_MAX);
    expect(PRIORITY_MAX).toBe(2_097_151);
    // The span from the anchor: 58 hours.
    expect(deadlinePriority(ANCHOR + 58 * 3_600_000, ANCHOR)).toBeLessThan(PRIORITY_MAX);
    expect(deadlinePriority(ANCHOR + 59 * 3_600_000, ANCHOR)).toBe(PRIORITY_MAX);
  });
});
