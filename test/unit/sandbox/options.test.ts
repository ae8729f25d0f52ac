import { describe, expect, it } from 'vitest';
import { sandboxOptionsFromFlags } from '../../../src/cli/commands/sandbox.ts';
import { UsageError } from '../../../src/errors.ts';
import { parseFaults, parseKeys, parseLatency } from '../../../src/sandbox/index.ts';
import { resolveOptions } from '../../../src/sandbox/options.ts';

describe('flag parsing', () => {
  it('keys, with the tp field', () => {
    expect(parseKeys('a:t1:100, b:t2:0:tp')).toEqual([
      { key: 'a', team: 't1', credits: 100, threatProtection: false },
      { key: 'b', team: 't2', credits: 0, threatProtection: true },
    ]);
    expect(() => parseKeys('a:t1')).toThrow(UsageError);
    expect(() => parseKeys('a:t1:5:xx')).toThrow(UsageError);
  });

  it('faults and latency', () => {
    expect(parseFaults('408=0.05,500=0.02,malformed=0.01,drop=0.01')).toEqual({
      timeout408: 0.05,
      error500: 0.02,
      malformed: 0.01,
      drop: 0.01,
    });
    expect(() => parseFaults('503=0.1')).toThrow(UsageError);
    expect(() => parseFaults('408=0.7,500=0.7')).toThrow(/at most 1/);
    expect(parseLatency('20')).toEqual({ minMs: 20, maxMs: 20 });
    expect(parseLatency('10-50')).toEqual({ minMs: 10, maxMs: 50 });
    expect(() => parseLatency('50-10')).toThrow(UsageError);
  });

  it('defaults and threat-protection teams', () => {
    const o = resolveOptions(
      sandboxOptionsFromFlags({ port: '0', host: '127.0.0.1', threatProtectionTeams: 'sandbox' }),
    );
    expect(o.keys).toEqual([
      { key: 'fc-sandbox', team: 'sandbox', credits: 1_000_000, threatProtection: true },
    ]);
    expect(o.timeScale).toBe(1);
    expect(o.rateLimitPerMinute).toBeUndefined();
  });

  it('rate limit mode and window', () => {
    const flags = { port: '0', host: '127.0.0.1', rateLimit: '10' };
    expect(resolveOptions(sandboxOptionsFromFlags(flags))).toMatchObject({
      rateLimitPerMinute: 10,
      rateLimitMode: 'fixed',
      rateLimitWindowMs: 60_000,
    });
    expect(
      resolveOptions(
        sandboxOptionsFromFlags({
          ...flags,
          rateLimitMode: 'token-bucket',
          rateLimitWindow: '2000',
        }),
      ),
    ).toMatchObject({ rateLimitMode: 'token-bucket', rateLimitWindowMs: 2000 });
    expect(() => sandboxOptionsFromFlags({ ...flags, rateLimitMode: 'leaky' })).toThrow(
      /expected one of fixed, sliding, token-bucket/,
    );
    expect(() => sandboxOptionsFromFlags({ ...flags, rateLimitWindow: '0' })).toThrow(UsageError);
  });
});
