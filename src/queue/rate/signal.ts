/**
 * What a 429 says about the service's rate limit, read from its text and its wait. Pure.
 *
 * The hosted service says everything in the message: "Rate limit exceeded. Consumed (req/min):
 * 101, Remaining (req/min): 0. ... please retry after 27s, resets at Sun Nov 22 2026 10:15:00
 * GMT+0000 (Coordinated Universal Time)". The service counts the refused request in
 * "Consumed", so its limit is `consumed - 1`. The unit names the window (`req/min`: one
 * minute). The wait comes from wherever the service put it (`Retry-After`, the body's
 * `retry_after_seconds`, the text; see src/api/retry-after.ts).
 *
 * How "retry after" and "resets at" relate tells how the service counts:
 *
 * | retry after vs resets at                   | shape    | meaning                                  |
 * |--------------------------------------------|----------|------------------------------------------|
 * | the same moment (within rounding)          | `window` | the allowance comes back then            |
 * | retry after much sooner                    | `refill` | requests trickle back before the "reset" |
 * |                                            |          | (a token bucket)                         |
 * | one of them missing, or resets before the  | `unknown`| only the wait is known (or a clock is    |
 * | wait ends                                  |          | off)                                     |
 */

export interface RateLimitSignal {
  /**
   * Requests per window the service allows: `consumed - 1` of a 429 with nothing remaining.
   * Undefined without counts, or when something remained (a concurrency limit, not the rate).
   */
  limit?: number;
  /** Requests the service counted in its window, the refused one included. */
  consumed?: number;
  /** What the service says remains of its window. */
  remaining?: number;
  /** The window the counts are per, in ms: one minute for `req/min`. */
  windowMs?: number;
  /** How long the service asked to wait, in ms. */
  retryAfterMs?: number;
  /** The moment the message says the limit resets, epoch ms (whole seconds). */
  resetsAtMs?: number;
}

const COUNTS_RE = /Consumed \(req\/([^)]*)\): (\d+), Remaining \(req\/[^)]*\): (\d+)/i;
const RESETS_RE = /resets at ([^\n"]+)/i;
const UNIT_RE = /^(\d+(?:\.\d+)?)?\s*(ms|s|sec|m|min|h|hour)$/i;
const UNIT_MS: Record<string, number> = {
  ms: 1,
  s: 1000,
  sec: 1000,
  m: 60_000,
  min: 60_000,
  h: 3_600_000,
  hour: 3_600_000,
};

/** Reads a 429's message (any text that contains the service's) and the wait it asked for. */
export function readRateLimitSignal(
  message: string,
  retryAfterMs: number | undefined,
): RateLimitSignal {
  const signal: RateLimitSignal = {};
  if (retryAfterMs !== undefined && retryAfterMs > 0) signal.retryAfterMs = retryAfterMs;
  const counts = COUNTS_RE.exec(message);
  if (counts) {
    const consumed = Number(counts[2]);
    const remaining = Number(counts[3]);
    signal.consumed = consumed;
    signal.remaining = remaining;
    if (remaining === 0 && consumed > 1) signal.limit = consumed - 1;
    const windowMs = windowFromUnit(counts[1]!);
    if (windowMs !== undefined) signal.windowMs = windowMs;
  }
  const resets = RESETS_RE.exec(message);
  if (resets) {
    const at = parseResetDate(resets[1]!);
    if (at !== undefined) signal.resetsAtMs = at;
  }
  return signal;
}

/** `min` -> 60000, `2s` -> 2000, `500ms` -> 500; undefined for a unit it does not know. */
export function windowFromUnit(unit: string): number | undefined {
  const m = UNIT_RE.exec(unit.trim());
  if (!m) return undefined;
  const ms = Number(m[1] ?? 1) * UNIT_MS[m[2]!.toLowerCase()]!;
  return ms > 0 ? Math.round(ms) : undefined;
}

/** A zone in a date: GMT/UTC/UT, or a numeric offset. */
const ZONE_RE = /\b(?:GMT|UTC|UT)\b|[+-]\d{2}:?\d{2}\b/i;

function parseResetDate(text: string): number | undefined {
  // `Date.toString()` form: drop the zone's name in parentheses; a date without a zone is GMT.
  const bare = text.replace(/\s*\([^)]*\)\s*/g, ' ').trim();
  const at = Date.parse(ZONE_RE.test(bare) ? bare : `${bare} GMT`);
  return Number.isNaN(at) ? undefined : at;
}

export type SignalShape = 'window' | 'refill' | 'unknown';

/**
 * "retry after" is whole seconds, rounded (the hosted service) or up (the sandbox); "resets at"
 * drops the milliseconds; and the answer took a while to arrive and be read. For one moment,
 * "resets at" lies between this much before and `LATE_RESET_MS` after "now + retry after".
 */
const EARLY_RESET_MS = 3000;
const LATE_RESET_MS = 1500;
/** Rounding of "retry after" to whole seconds (the hosted service rounds to nearest). */
const RETRY_ROUNDING_MS = 500;
/** "resets at" drops the milliseconds. */
const RESET_TRUNCATION_MS = 1000;

export interface Reset {
  shape: SignalShape;
  /**
   * When the service is ready again, epoch ms, at the latest: the window's end (`window`), else
   * the end of the wait it asked for. Undefined when it named no wait.
   */
  atMs?: number;
  /** `window`: the earliest the window may end, epoch ms (the two numbers are whole seconds). */
  earliestMs?: number;
  /**
   * `window`: the one multiple of the window length (since the epoch) between `earliestMs` and
   * `atMs`, when there is one: the service's windows seem aligned to the clock, and this is
   * where the window ends.
   */
  alignedAtMs?: number;
}

/**
 * The shape of a 429 (see the table above) and the latest moment it resets; `windowMs`, the
 * length of the service's windows, tells whether its reset falls on the clock's windows.
 */
export function resetOf(signal: RateLimitSignal, nowMs: number, windowMs?: number): Reset {
  const { retryAfterMs, resetsAtMs } = signal;
  if (retryAfterMs === undefined) return { shape: 'unknown' };
  const waitEndsAt = nowMs + retryAfterMs + RETRY_ROUNDING_MS;
  if (resetsAtMs === undefined) return { shape: 'unknown', atMs: waitEndsAt };
  const gap = resetsAtMs - (nowMs + retryAfterMs);
  if (gap > LATE_RESET_MS) return { shape: 'refill', atMs: waitEndsAt };
  if (gap < -EARLY_RESET_MS) return { shape: 'unknown', atMs: waitEndsAt };
  // Both are bounds of the same moment; the tighter ones win.
  const atMs = Math.min(waitEndsAt, resetsAtMs + RESET_TRUNCATION_MS);
  const earliestMs = Math.max(resetsAtMs, nowMs + retryAfterMs - 1000);
  const reset: Reset = { shape: 'window', atMs, earliestMs };
  const boundary = windowMs ? Math.floor(atMs / windowMs) * windowMs : Number.NaN;
  if (boundary >= earliestMs) reset.alignedAtMs = boundary;
  return reset;
}
