import { describe, expect, it } from 'vitest';
import { parseDuration } from '../../../src/pipeline/duration.ts';

describe('parseDuration', () => {
  it.each([
    ['90m', 90 * 60_000],
    ['12h', 12 * 3_600_000],
    ['30d', 30 * 86_400_000],
    ['2w', 14 * 86_400_000],
    [' 1d ', 86_400_000],
  ])('%s', (text, ms) => expect(parseDuration(text)).toBe(ms));

  it.each(['', '0d', '30', 'd', '30 days', '1.5d', '-1d', '1y', '1mo', '30D'])(
    'refuses %j',
    (text) => expect(parseDuration(text)).toBeUndefined(),
  );
});
