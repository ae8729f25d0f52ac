import { describe, expect, it } from 'vitest';
import { parseRetryAfterMs, RETRY_AFTER_CAP_MS } from '../../../src/api/retry-after.ts';

const NOW = Date.parse('2026-11-22T10:14:33Z');
const HOSTED_429 =
  'Rate limit exceeded. Consumed (req/min): 101, Remaining (req/min): 0. Upgrade your plan at https://firecrawl.dev/pricing for increased rate limits or please retry after 27s, resets at Sun Nov 22 2026 10:15:00 GMT+0000 (Coordinated Universal Time)';

describe('parseRetryAfterMs', () => {
  it.each([
    ['seconds', '30', 30_000],
    ['seconds with spaces', ' 5 ', 5_000],
    ['fractional seconds', '1.5', 1_500],
    ['HTTP-date 90 s ahead', new Date(NOW + 90_000).toUTCString(), 90_000],
    ['array header (first value)', ['7', '9'], 7_000],
  ] as const)('reads a Retry-After header in %s', (_name, header, expected) => {
    expect(parseRetryAfterMs({ header: header as string | string[], nowMs: NOW })).toBe(expected);
  });

  it('reads the obsolete HTTP-date forms as GMT, whatever the local time zone', () => {
    const tz = process.env.TZ;
    process.env.TZ = 'America/New_York';
    try {
      for (const header of ['Sun Nov 22 10:15:00 2026', 'Sunday, 22-Nov-26 10:15:00 GMT']) {
        expect(parseRetryAfterMs({ header, nowMs: NOW })).toBe(27_000);
      }
    } finally {
      if (tz === undefined) delete process.env.TZ;
      else process.env.TZ = tz;
    }
  });

  it('reads retry_after_seconds from the body', () => {
    expect(parseRetryAfterMs({ body: { retry_after_seconds: 12 }, nowMs: NOW })).toBe(12_000);
    expect(parseRetryAfterMs({ body: { retry_after_seconds: '4' }, nowMs: NOW })).toBe(4_000);
  });

  it('reads the wait from the hosted 429 message text', () => {
    expect(parseRetryAfterMs({ body: { success: false, error: HOSTED_429 }, nowMs: NOW })).toBe(
      27_000,
    );
    expect(parseRetryAfterMs({ body: HOSTED_429, nowMs: NOW })).toBe(27_000);
    expect(parseRetryAfterMs({ body: { message: 'please Retry After 3s' }, nowMs: NOW })).toBe(
      3_000,
    );
  });

  it('prefers the header, then the body field, then the message', () => {
    const body = { retry_after_seconds: 12, error: HOSTED_429 };
    expect(parseRetryAfterMs({ header: '2', body, nowMs: NOW })).toBe(2_000);
    expect(parseRetryAfterMs({ body, nowMs: NOW })).toBe(12_000);
  });

  it('falls through a useless source to the next one', () => {
    expect(parseRetryAfterMs({ header: '0', body: { error: HOSTED_429 }, nowMs: NOW })).toBe(
      27_000,
    );
    expect(
      parseRetryAfterMs({
        header: 'soon',
        body: { retry_after_seconds: -1, error: HOSTED_429 },
        nowMs: NOW,
      }),
    ).toBe(27_000);
  });

  it.each([
    ['no input', {}],
    ['zero seconds', { header: '0' }],
    ['negative seconds', { header: '-5' }],
    ['garbage header', { header: 'later please' }],
    ['empty header', { header: '' }],
    ['past HTTP-date', { header: new Date(NOW - 60_000).toUTCString() }],
    ['HTTP-date equal to now', { header: new Date(NOW).toUTCString() }],
    ['zero body field', { body: { retry_after_seconds: 0 } }],
    ['NaN body field', { body: { retry_after_seconds: Number.NaN } }],
    ['message without a wait', { body: { error: 'Rate limit exceeded.' } }],
    ['message with 0s', { body: { error: 'please retry after 0s' } }],
    ['null body', { body: null }],
    ['number body', { body: 42 }],
  ])('gives no hint for %s', (_name, input) => {
    expect(parseRetryAfterMs({ ...input, nowMs: NOW })).toBeUndefined();
  });

  it('caps absurd values at one hour', () => {
    expect(RETRY_AFTER_CAP_MS).toBe(3_600_000);
    expect(parseRetryAfterMs({ header: '999999', nowMs: NOW })).toBe(RETRY_AFTER_CAP_MS);
    expect(
      parseRetryAfterMs({ header: new Date(NOW + 86_400_000).toUTCString(), nowMs: NOW }),
    ).toBe(RETRY_AFTER_CAP_MS);
    expect(parseRetryAfterMs({ body: { retry_after_seconds: 1e9 }, nowMs: NOW })).toBe(
      RETRY_AFTER_CAP_MS,
    );
    expect(parseRetryAfterMs({ body: { error: 'retry after 86400s' }, nowMs: NOW })).toBe(
      RETRY_AFTER_CAP_MS,
    );
  });
});
