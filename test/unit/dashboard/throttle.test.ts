import { describe, expect, it } from 'vitest';
import { clientKey, FailureThrottle } from '../../../src/dashboard/throttle.ts';

function clock(start = 1_000_000) {
  let now = start;
  return { now: () => now, advance: (ms: number) => (now += ms) };
}

describe('FailureThrottle', () => {
  it('lets the first failures pass, then locks out for a doubling delay up to the cap', () => {
    const c = clock();
    const t = new FailureThrottle({ now: c.now });
    const delays: number[] = [];
    for (let i = 0; i < 15; i++) {
      expect(t.waitMs('203.0.113.7')).toBe(0);
      delays.push(t.failed('203.0.113.7'));
      c.advance(delays.at(-1)!);
    }
    expect(delays).toEqual([
      0, 0, 0, 0, 0, 1000, 2000, 4000, 8000, 16_000, 32_000, 64_000, 128_000, 256_000, 300_000,
    ]);
  });

  it('makes a locked-out address wait, without counting what it sends meanwhile', () => {
    const c = clock();
    const t = new FailureThrottle({ now: c.now, freeFailures: 1, firstDelayMs: 1000 });
    t.failed('198.51.100.1');
    expect(t.failed('198.51.100.1')).toBe(1000);
    expect(t.waitMs('198.51.100.1')).toBe(1000);
    c.advance(400);
    expect(t.waitMs('198.51.100.1')).toBe(600);
    // Another address is not held back.
    expect(t.waitMs('198.51.100.2')).toBe(0);
    c.advance(600);
    expect(t.waitMs('198.51.100.1')).toBe(0);
  });

  it('starts again after a right password, and forgets an address after a quiet hour', () => {
    const c = clock();
    const t = new FailureThrottle({ now: c.now, freeFailures: 2 });
    t.failed('a');
    t.failed('a');
    t.succeeded('a');
    expect(t.failed('a')).toBe(0);
    t.failed('a');
    expect(t.failed('a')).toBe(1000);
    c.advance(3_600_000);
    expect(t.waitMs('a')).toBe(0);
    expect(t.size).toBe(0);
    expect(t.failed('a')).toBe(0);
  });

  it('keeps at most maxClients addresses, dropping the least recently failed', () => {
    const t = new FailureThrottle({ maxClients: 3, freeFailures: 0 });
    for (const a of ['10.0.0.1', '10.0.0.2', '10.0.0.3', '10.0.0.1', '10.0.0.4']) t.failed(a);
    expect(t.size).toBe(3);
    expect(t.waitMs('10.0.0.2')).toBe(0); // dropped
    expect(t.waitMs('10.0.0.1')).toBeGreaterThan(0);
  });
});

describe('clientKey', () => {
  it('counts IPv4 as it is, IPv4-mapped as IPv4, IPv6 by its /64', () => {
    expect(clientKey('203.0.113.7')).toBe('203.0.113.7');
    expect(clientKey('::ffff:203.0.113.7')).toBe('203.0.113.7');
    expect(clientKey('2001:db8:1:2:aaaa::1')).toBe('2001:db8:1:2::/64');
    expect(clientKey('2001:db8:1:2::ffff')).toBe('2001:db8:1:2::/64');
    expect(clientKey('2001:0db8:0001:0002:1:2:3:4')).toBe('2001:db8:1:2::/64');
    expect(clientKey('::1')).toBe('0:0:0:0::/64');
    expect(clientKey('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
  });
});
