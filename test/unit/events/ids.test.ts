import { describe, expect, it } from 'vitest';
import { newCallId } from '../../../src/events/ids.ts';

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('newCallId', () => {
  it('makes well-formed, distinct UUIDv7s across many refills of its random pool', () => {
    const ids = Array.from({ length: 5000 }, () => newCallId(1_700_000_000_000));
    for (const id of ids) expect(id).toMatch(UUID_V7);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('sorts ids of different milliseconds by time', () => {
    const times = [1_700_000_000_000, 1_700_000_000_001, 1_700_000_123_456, 1_800_000_000_000];
    const ids = times.map((t) => newCallId(t));
    expect([...ids].sort()).toEqual(ids);
    expect(ids[0]?.slice(0, 13)).toBe('018bcfe5-6800');
  });
});
