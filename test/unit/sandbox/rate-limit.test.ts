import { describe, expect, it } from 'vitest';
import { rateLimitMessage } from '../../../src/contract/index.ts';
import { RateLimiter, type RateLimitMode } from '../../../src/sandbox/rate-limit.ts';
import { app, search } from './helpers.ts';

const T0 = Date.UTC(2026, 10, 22, 10, 14, 0);

function limiter(mode: RateLimitMode, limit: number, windowMs = 60_000) {
  return new RateLimiter({ limit, windowMs, mode, maxConcurrency: undefined });
}

/** Admits `n` requests at `atMs` (released at once); returns the rejections. */
function burst(l: RateLimiter, n: number, atMs: number) {
  const out = [];
  for (let i = 0; i < n; i++) {
    const r = l.admit('t', atMs);
    if (r) out.push(r);
    else l.release('t');
  }
  return out;
}

describe('fixed windows', () => {
  it('count per clock window, refused requests too, and reset at the window end', () => {
    const l = limiter('fixed', 3);
    const refused = burst(l, 5, T0 + 33_000);
    expect(refused.map((r) => r.consumed)).toEqual([4, 5]);
    expect(refused[0]).toMatchObject({
      remaining: 0,
      retryAfterS: 27,
      resetsAt: new Date(T0 + 60_000),
      windowMs: 60_000,
    });
    expect(burst(l, 3, T0 + 60_000)).toEqual([]);
  });

  it('windows of any length, named in the message', () => {
    const l = limiter('fixed', 2, 2000);
    const [r] = burst(l, 3, T0 + 500);
    expect(r).toMatchObject({ consumed: 3, retryAfterS: 2, resetsAt: new Date(T0 + 2000) });
    expect(rateLimitMessage(r!)).toMatch(
      /^Rate limit exceeded\. Consumed \(req\/2s\): 3, Remaining \(req\/2s\): 0\. .* retry after 2s, resets at Sun Nov 22 2026 10:14:02 GMT\+0000/,
    );
    expect(burst(l, 2, T0 + 2000)).toEqual([]);
  });
});

describe('sliding log', () => {
  it('admits at most the limit in any window; a slot frees when its request leaves', () => {
    const l = limiter('sliding', 3);
    burst(l, 2, T0);
    burst(l, 1, T0 + 10_000);
    const [r] = burst(l, 1, T0 + 30_000);
    // Only admitted requests count; the oldest leaves at T0 + 60 s.
    expect(r).toMatchObject({
      consumed: 4,
      remaining: 0,
      retryAfterS: 30,
      resetsAt: new Date(T0 + 60_000),
    });
    expect(burst(l, 1, T0 + 59_999)).toHaveLength(1);
    // Two leave at T0 + 60 s, the third only at T0 + 70 s: no fresh allowance as in a fixed window.
    expect(burst(l, 3, T0 + 60_000)).toHaveLength(1);
    expect(burst(l, 1, T0 + 70_000)).toEqual([]);
  });
});

describe('token bucket', () => {
  it('allows a burst of the limit, then one request per window / limit', () => {
    const l = limiter('token-bucket', 60);
    expect(burst(l, 60, T0)).toEqual([]);
    const [r] = burst(l, 1, T0 + 400);
    expect(r).toMatchObject({
      consumed: 61,
      remaining: 0,
      retryAfterS: 1,
      resetsAt: new Date(T0 + 60_000),
    });
    expect(burst(l, 1, T0 + 1000)).toEqual([]);
    expect(burst(l, 1, T0 + 1500)).toHaveLength(1);
    expect(burst(l, 30, T0 + 31_000)).toEqual([]);
  });
});

describe('changing the limit mid-run', () => {
  it.each(['fixed', 'sliding', 'token-bucket'] as const)(
    '%s: with keepCounts the lower limit applies to what was counted',
    (mode) => {
      const l = limiter(mode, 10);
      expect(burst(l, 8, T0 + 1000)).toEqual([]);
      l.configure({ ...l.settings, limit: 5 }, true);
      // Fixed and sliding have counted 8 (> 5); the bucket has at most 2 tokens left.
      const refused = burst(l, 3, T0 + 2000);
      expect(refused.length).toBe(mode === 'token-bucket' ? 1 : 3);
      expect(refused[0]?.consumed).toBeGreaterThan(5);
      l.configure({ ...l.settings, limit: 5 });
      expect(burst(l, 5, T0 + 2000)).toEqual([]);
    },
  );

  it('a new mode or window starts afresh', () => {
    const l = limiter('fixed', 2);
    burst(l, 2, T0);
    l.configure({ ...l.settings, mode: 'sliding' }, true);
    expect(burst(l, 2, T0 + 1)).toEqual([]);
  });
});

describe('over HTTP', () => {
  it('POST /_sandbox/rate-limit changes limit, mode and window mid-run', async () => {
    let nowMs = T0 + 500;
    const sandbox = app({ rateLimitPerMinute: 2, now: () => nowMs });
    const post = (payload: object) =>
      sandbox.inject({ method: 'POST', url: '/_sandbox/rate-limit', payload });
    expect((await post({ perMinute: 1, mode: 'token-bucket', windowMs: 1000 })).statusCode).toBe(
      200,
    );
    expect((await search(sandbox, { query: 'a' })).status).toBe(200);
    const refused = await search(sandbox, { query: 'b' });
    expect(refused.status).toBe(429);
    expect(refused.json().error).toContain('Consumed (req/1s): 2');
    nowMs += 1000;
    expect((await search(sandbox, { query: 'c' })).status).toBe(200);
    expect((await post({ mode: 'bursty' })).statusCode).toBe(400);
    expect((await post({ perMinute: 1, windowMs: 0 })).statusCode).toBe(400);
    await sandbox.close();
  });

  it('a refusal for concurrency says that something of the rate remains', async () => {
    const sandbox = app({
      rateLimitPerMinute: 100,
      maxConcurrency: 1,
      latency: { minMs: 100, maxMs: 100 },
    });
    const answers = await Promise.all([
      search(sandbox, { query: 'a' }),
      search(sandbox, { query: 'b' }),
    ]);
    const refused = answers.find((a) => a.status === 429);
    expect(refused?.json().error).toMatch(/Consumed \(req\/min\): 2, Remaining \(req\/min\): 98\./);
    await sandbox.close();
  });
});
