import { describe, expect, it } from 'vitest';
import {
  apiKeyId,
  capLesson,
  capSignal,
  DEFAULT_MAX_RATE_HOLD_MS,
  holdOfModel,
} from '../../../../src/queue/rate/hold.ts';
import { formatRateHold } from '../../../../src/queue/rate/holds.ts';
import { learn, OPEN_MODEL } from '../../../../src/queue/rate/model.ts';
import { readRateLimitSignal } from '../../../../src/queue/rate/signal.ts';

const NOW = 1_800_000_000_000;
const MAX = DEFAULT_MAX_RATE_HOLD_MS;

describe('capSignal', () => {
  it('leaves a wait within the maximum as it is', () => {
    const signal = { retryAfterMs: 30_000, resetsAtMs: NOW + 30_000, limit: 10 };
    expect(capSignal(signal, NOW, MAX)).toEqual({ signal });
  });

  it('cuts a Retry-After of a billion seconds to the maximum, and says what was asked', () => {
    const asked = 1e9 * 1000;
    const { signal, askedMs } = capSignal({ retryAfterMs: asked }, NOW, MAX);
    expect(signal.retryAfterMs).toBe(MAX);
    expect(askedMs).toBe(asked);
  });

  it('drops a "resets at" beyond the maximum: it no longer names the capped moment', () => {
    const read = readRateLimitSignal(
      'Consumed (req/min): 11, Remaining (req/min): 0. retry after 20s, resets at Sun Nov 22 2099 10:15:00 GMT',
      20_000,
    );
    const { signal, askedMs } = capSignal(read, NOW, MAX);
    expect(signal).toMatchObject({ limit: 10, retryAfterMs: 20_000 });
    expect(signal.resetsAtMs).toBeUndefined();
    expect(askedMs).toBeGreaterThan(MAX);
  });
});

describe('capLesson', () => {
  it('cuts a hold and a fixed window that ends beyond the maximum', () => {
    const farS = 100_000;
    const lesson = learn(OPEN_MODEL, {
      signal: {
        limit: 10,
        consumed: 11,
        remaining: 0,
        windowMs: 60_000,
        retryAfterMs: farS * 1000,
        resetsAtMs: NOW + farS * 1000,
      },
      fresh: true,
      nowMs: NOW,
      observedPerSec: 0,
    });
    expect(lesson.model.regime).toBe('fixed');
    const capped = capLesson(lesson, NOW, MAX);
    expect(capped.holdMs).toBe(MAX);
    expect(capped.model.windowEndsAt).toBe(NOW + MAX);
    expect(capped.model.version).toBe(lesson.model.version);
    expect(capped.askedMs).toBeGreaterThan(farS * 1000);
  });

  it('leaves a lesson within the maximum untouched', () => {
    const lesson = { model: OPEN_MODEL, holdMs: 5000 };
    expect(capLesson(lesson, NOW, MAX)).toBe(lesson);
  });
});

describe('apiKeyId', () => {
  it('is a short hash: the key itself never appears, two keys differ, one key is stable', () => {
    const id = apiKeyId('fc-secret-key-a');
    expect(id).toMatch(/^[0-9a-f]{12}$/);
    expect(id).not.toContain('secret');
    expect(apiKeyId('fc-secret-key-a')).toBe(id);
    expect(apiKeyId('fc-secret-key-b')).not.toBe(id);
    expect(apiKeyId(undefined)).toBe('none');
  });
});

describe('holdOfModel', () => {
  it("names a 429's wait in force: whose, why, until when, and whether it was capped", () => {
    const fields = { holdUntil: String(NOW + 5000), holdWhy: 'retry-after', holdCapped: '1' };
    expect(holdOfModel('abc', fields, NOW)).toEqual({
      whose: 'key abc',
      why: '429: Retry-After (capped by HARVEST_MAX_RATE_HOLD_MS)',
      untilMs: NOW + 5000,
    });
  });

  it('names a spent fixed window with its learned limit', () => {
    const fields = {
      mode: 'window',
      limit: '10',
      count: '10',
      windowMs: '60000',
      end: String(NOW + 20_000),
    };
    expect(holdOfModel('abc', fields, NOW)).toEqual({
      whose: 'key abc',
      why: '429: learned limit 10 per 60 s, window spent',
      untilMs: NOW + 20_000,
    });
  });

  it('nothing once the hold is over, or with nothing learned', () => {
    expect(holdOfModel('abc', { holdUntil: String(NOW - 1) }, NOW)).toBeUndefined();
    expect(holdOfModel('abc', {}, NOW)).toBeUndefined();
  });
});

describe('formatRateHold', () => {
  it('says whose, why, until when (UTC) and in how long', () => {
    const untilMs = Date.UTC(2026, 11, 6, 10, 15, 0);
    const hold = { whose: 'key abc', why: '429: Retry-After', untilMs };
    expect(formatRateHold(hold, untilMs - 41_500)).toBe(
      'key abc: 429: Retry-After, until 10:15:00 UTC (in 42 s)',
    );
  });
});
