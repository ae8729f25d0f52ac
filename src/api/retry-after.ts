/**
 * How long the service asked us to wait, read from wherever it put it. Pure.
 *
 * The hosted service sends no `Retry-After` header on 429; the wait is in the message text
 * ("... please retry after 27s, resets at ..."), and a keyless-tier 429 has
 * `retry_after_seconds` in the body. A `Retry-After` header, should one appear, wins.
 */

/** Longest wait a hint may ask for; larger hints are cut to this, in milliseconds (1 hour). */
export const RETRY_AFTER_CAP_MS = 3_600_000;

export interface RetryAfterInput {
  /** The `Retry-After` header: delay-seconds or an HTTP-date. */
  header?: string | readonly string[] | undefined;
  /** The parsed response body (an object with `retry_after_seconds` or an `error` text). */
  body?: unknown;
  /** Current time, in ms since the epoch, for the HTTP-date form. */
  nowMs: number;
}

const SECONDS_RE = /^\s*(\d+(?:\.\d+)?)\s*$/;
const MESSAGE_RE = /retry after (\d+(?:\.\d+)?)\s*s/i;

/**
 * Milliseconds to wait, or `undefined` when there is no usable hint. Sources, in order: the
 * `Retry-After` header (seconds or HTTP-date), the body's `retry_after_seconds`, the text
 * `retry after <n>s` in the body's `error` (or `message`, or the body itself when it is a
 * string). A source that is absent, zero, negative, unparsable or a past date is skipped.
 * Values above {@link RETRY_AFTER_CAP_MS} are cut to it.
 */
export function parseRetryAfterMs(input: RetryAfterInput): number | undefined {
  const fromHeader = headerMs(input.header, input.nowMs);
  if (fromHeader !== undefined) return cap(fromHeader);
  const body = input.body;
  if (typeof body === 'string') return textMs(body);
  if (body === null || typeof body !== 'object') return undefined;
  const record = body as Record<string, unknown>;
  const fromField = secondsMs(record.retry_after_seconds);
  if (fromField !== undefined) return cap(fromField);
  if (typeof record.error === 'string') {
    const fromError = textMs(record.error);
    if (fromError !== undefined) return fromError;
  }
  if (typeof record.message === 'string') return textMs(record.message);
  return undefined;
}

function headerMs(header: RetryAfterInput['header'], nowMs: number): number | undefined {
  const value = typeof header === 'string' ? header : header?.[0];
  if (value === undefined) return undefined;
  const seconds = SECONDS_RE.exec(value);
  if (seconds) return positiveMs(Number(seconds[1]) * 1000);
  if (!/[a-z]/i.test(value)) return undefined;
  // Every HTTP-date is GMT, but its obsolete asctime form says no zone, and Date.parse would
  // take that as local time.
  const at = Date.parse(ZONE_RE.test(value) ? value : `${value} GMT`);
  if (Number.isNaN(at)) return undefined;
  return positiveMs(at - nowMs);
}

/** A zone in a date: GMT/UTC/UT, or a numeric offset. */
const ZONE_RE = /\b(?:GMT|UTC|UT)\b|[+-]\d{2}:?\d{2}\b/i;

function secondsMs(value: unknown): number | undefined {
  if (typeof value === 'number') return positiveMs(value * 1000);
  if (typeof value === 'string' && SECONDS_RE.test(value)) return positiveMs(Number(value) * 1000);
  return undefined;
}

function textMs(text: string): number | undefined {
  const match = MESSAGE_RE.exec(text);
  if (!match) return undefined;
  const ms = positiveMs(Number(match[1]) * 1000);
  return ms === undefined ? undefined : cap(ms);
}

function positiveMs(ms: number): number | undefined {
  return Number.isFinite(ms) && ms > 0 ? Math.ceil(ms) : undefined;
}

function cap(ms: number): number {
  return Math.min(ms, RETRY_AFTER_CAP_MS);
}
