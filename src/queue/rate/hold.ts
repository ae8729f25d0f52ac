/**
 * Holds: how long an API key's calls wait, and why. Pure.
 *
 * A hold comes from the service (a 429's wait, a fixed window spent until its reset) and is
 * kept on the key's model in Redis (`holdUntil`, `holdWhy`), so every pool on that key waits
 * and `harvest status` can say whose, why and until when. No hold is longer than the
 * `HARVEST_MAX_RATE_HOLD_MS` setting: a service that asks for more (a `Retry-After` of a
 * billion seconds) is asked again after it, and the cut is logged.
 */
import { createHash } from 'node:crypto';
import type { Lesson } from './model.ts';
import type { RateLimitSignal } from './signal.ts';

/** Default of `HARVEST_MAX_RATE_HOLD_MS`: ten minutes. */
export const DEFAULT_MAX_RATE_HOLD_MS = 600_000;

/** Why a key's calls are held (the `holdWhy` field). */
export type HoldCause = 'retry-after' | 'learned-limit';

/**
 * The id of an API key in Redis key names and in `status`: the first 12 hex digits of its
 * sha256 (the key itself is never written to Redis). `none` for a pool without a key.
 */
export function apiKeyId(apiKey: string | undefined): string {
  if (!apiKey) return 'none';
  return createHash('sha256').update(apiKey).digest('hex').slice(0, 12);
}

/**
 * A 429's signal with its wait cut to `maxHoldMs`; `askedMs` is what the service asked for
 * when it was cut. A "resets at" beyond the cut is dropped with it: the two would no longer
 * name one moment.
 */
export function capSignal(
  signal: RateLimitSignal,
  nowMs: number,
  maxHoldMs: number,
): { signal: RateLimitSignal; askedMs?: number } {
  const { retryAfterMs, resetsAtMs } = signal;
  const longWait = retryAfterMs !== undefined && retryAfterMs > maxHoldMs;
  const lateReset = resetsAtMs !== undefined && resetsAtMs - nowMs > maxHoldMs;
  if (!longWait && !lateReset) return { signal };
  const capped: RateLimitSignal = { ...signal };
  if (longWait) capped.retryAfterMs = maxHoldMs;
  if (lateReset || longWait) delete capped.resetsAtMs;
  const askedMs = Math.max(retryAfterMs ?? 0, resetsAtMs === undefined ? 0 : resetsAtMs - nowMs);
  return { signal: capped, askedMs };
}

/**
 * A lesson whose hold (and fixed window's end) is at most `maxHoldMs` away; `askedMs` is the
 * hold it asked for when it was cut.
 */
export function capLesson(
  lesson: Lesson,
  nowMs: number,
  maxHoldMs: number,
): Lesson & { askedMs?: number } {
  const { model, holdMs } = lesson;
  const latest = nowMs + maxHoldMs;
  const lateWindow = model.regime === 'fixed' && model.windowEndsAt > latest;
  if (holdMs <= maxHoldMs && !lateWindow) return lesson;
  const windowEndsAt = Math.min(model.windowEndsAt, latest);
  return {
    model: lateWindow
      ? { ...model, windowEndsAt, resetSlackMs: Math.min(model.resetSlackMs, maxHoldMs) }
      : model,
    holdMs: Math.min(holdMs, maxHoldMs),
    askedMs: Math.max(holdMs, model.windowEndsAt - nowMs),
  };
}

/** A hold in force, as `harvest status` shows it. */
export interface RateHold {
  /** Whose calls wait: `key <id>` (an API key, by `apiKeyId`) or `run <id>`. */
  whose: string;
  /** Why, in words. */
  why: string;
  /** Until when, epoch ms (Redis's clock). */
  untilMs: number;
}

/**
 * The hold a key's model hash (`rateOf(keyId).rate`) puts in force at `nowMs`, if any: a 429's
 * wait, a fixed window spent until its end, or a pace whose next turn is far off.
 */
export function holdOfModel(
  keyId: string,
  fields: Record<string, string>,
  nowMs: number,
): RateHold | undefined {
  const whose = `key ${keyId}`;
  const limit = fields.limit ? Number(fields.limit) : undefined;
  const holdUntil = Number(fields.holdUntil) || 0;
  const windowEnd = Number(fields.end) || 0;
  const spent = fields.mode === 'window' && limit !== undefined && Number(fields.count) >= limit;
  const learned =
    limit !== undefined ? `learned limit ${limit} per ${Number(fields.windowMs) / 1000} s` : '';
  if (spent && windowEnd > nowMs && windowEnd >= holdUntil) {
    return { whose, why: `429: ${learned}, window spent`, untilMs: windowEnd };
  }
  if (holdUntil > nowMs) {
    const cause = [fields.holdWhy === 'retry-after' ? 'Retry-After' : '', learned]
      .filter(Boolean)
      .join(', ');
    const capped = fields.holdCapped === '1' ? ' (capped by HARVEST_MAX_RATE_HOLD_MS)' : '';
    return { whose, why: `429: ${cause || 'rate limit'}${capped}`, untilMs: holdUntil };
  }
  return undefined;
}
