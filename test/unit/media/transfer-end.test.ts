import { describe, expect, it } from 'vitest';
import { transferEnd } from '../../../src/media/download.ts';

describe('transferEnd', () => {
  const url = { deadlineAt: 10_000, expiresAt: 12_000 };

  it("is the URL's deadline (its expiry less the margin) while that is ahead", () => {
    expect(transferEnd(url, 5_000)).toBe(10_000);
  });

  it('is the expiry once the deadline has passed: an old URL, while it lasts', () => {
    expect(transferEnd(url, 10_000)).toBe(12_000);
    expect(transferEnd({ deadlineAt: 10_000 }, 11_000)).toBeUndefined();
    expect(transferEnd({}, 11_000)).toBeUndefined();
  });
});
