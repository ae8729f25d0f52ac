/**
 * Error bodies and the exact strings the hosted service sends (api-notes.md, "Errors, exactly
 * as sent"). The sandbox produces them; the API client recognises them.
 */
import { z } from 'zod';

export const ErrorBodySchema = z.looseObject({
  success: z.literal(false),
  error: z.string(),
  code: z.string().optional(),
  details: z.array(z.unknown()).optional(),
  /** Keyless-tier 429 only: seconds to wait. */
  retry_after_seconds: z.number().optional(),
});
export type ErrorBody = z.infer<typeof ErrorBodySchema>;

/** Stable `code` values of error bodies. */
export const ERROR_CODES = {
  badRequestInvalidJson: 'BAD_REQUEST_INVALID_JSON',
  badRequest: 'BAD_REQUEST',
  scrapeTimeout: 'SCRAPE_TIMEOUT',
  unknownError: 'UNKNOWN_ERROR',
  scrapeNoCachedData: 'SCRAPE_NO_CACHED_DATA',
  scrapeLockdownCacheMiss: 'SCRAPE_LOCKDOWN_CACHE_MISS',
} as const;

/**
 * Error strings. Where api-notes elides the rest of a message with "...", the value is the
 * known leading sentence: match those with `startsWith`.
 */
export const ERROR_MESSAGES = {
  /** 400, with `details`. */
  invalidBody: 'Invalid request body',
  /** 400, code BAD_REQUEST_INVALID_JSON. */
  malformedJson: 'Bad request, malformed JSON',
  /** 413 (body over 10 MB). */
  tooLarge: 'Request body is too large',
  /** 401, `Authorization: Bearer` without a token. */
  tokenMissing: 'Unauthorized: Token missing',
  /** 401, unknown key. */
  invalidToken: 'Unauthorized: Invalid token',
  /** 402. */
  insufficientCredits:
    'Insufficient credits to perform this request. For more credits, you can upgrade your plan at https://firecrawl.dev/pricing or try changing the request limit to a lower value.',
  /** 403, leading sentence. */
  threatProtectionNotEnabled:
    'Threat protection is an enterprise feature and is not enabled for your team.',
  /** 403, a valid `__agentInterop` whose `auth` is not the service's own secret. */
  agentInteropInvalid: 'Invalid agent interop.',
  /** 408, code SCRAPE_TIMEOUT, leading sentence. */
  scrapeTimeout: 'The scrape operation timed out before completing.',
  /** 500, code UNKNOWN_ERROR, leading sentence (the message ends with an exception id). */
  unknownError: 'An unexpected error occurred.',
  /** 400 on params preview, code BAD_REQUEST: prefix followed by the problems. */
  invalidParams: 'Invalid request parameters: ',
} as const;

/** The 500 UNKNOWN_ERROR message carrying an exception id. */
export function unknownErrorMessage(exceptionId: string): string {
  return `${ERROR_MESSAGES.unknownError} Please contact help@firecrawl.com for help. Your exception ID is ${exceptionId}`;
}

export interface RateLimitMessageInput {
  /** Requests consumed in the current window. */
  consumed: number;
  /** Requests remaining in the current window. */
  remaining: number;
  /** Seconds until the limit resets (rounded up by the caller). */
  retryAfterS: number;
  /** When the window resets. */
  resetsAt: Date;
  /**
   * The window the counts are per, in ms. Default one minute, which the message calls `req/min`
   * as the hosted service does; other windows are named the same way (`req/2s`, `req/500ms`).
   */
  windowMs?: number;
}

const WEEKDAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const pad2 = (n: number) => String(n).padStart(2, '0');

/** `Date.prototype.toString()` as printed in UTC, independent of the local time zone. */
export function utcDateString(date: Date): string {
  const day = `${WEEKDAYS[date.getUTCDay()]} ${MONTHS[date.getUTCMonth()]} ${pad2(date.getUTCDate())}`;
  const time = `${pad2(date.getUTCHours())}:${pad2(date.getUTCMinutes())}:${pad2(date.getUTCSeconds())}`;
  return `${day} ${date.getUTCFullYear()} ${time} GMT+0000 (Coordinated Universal Time)`;
}

/** The unit of a rate in the 429 message: `min` for one minute (the hosted text), else `2s`, `500ms`. */
export function rateWindowLabel(windowMs: number): string {
  if (windowMs === 60_000) return 'min';
  if (windowMs === 3_600_000) return 'h';
  return windowMs % 1000 === 0 ? `${windowMs / 1000}s` : `${windowMs}ms`;
}

/** The 429 message; the only place the service states how long to wait. */
export function rateLimitMessage(input: RateLimitMessageInput): string {
  const unit = `req/${rateWindowLabel(input.windowMs ?? 60_000)}`;
  return (
    `Rate limit exceeded. Consumed (${unit}): ${input.consumed}, Remaining (${unit}): ${input.remaining}. ` +
    `Upgrade your plan at https://firecrawl.dev/pricing for increased rate limits or please retry after ${input.retryAfterS}s, ` +
    `resets at ${utcDateString(input.resetsAt)}`
  );
}

/** Recovers the wait from a 429 message: group 1 holds the seconds. */
export const RATE_LIMIT_RETRY_AFTER_PATTERN = /retry after (\d+)s/;

/** One entry of a 400 `details` array (zod-style issue). */
export interface InvalidBodyDetail {
  code: string;
  path: Array<string | number>;
  message: string;
  [key: string]: unknown;
}

/**
 * zod issues as the hosted service lists them in `details`: code, path, message and the
 * issue's own fields (expected, keys, minimum, ...), without the offending input.
 */
export function invalidBodyDetails(error: z.ZodError): InvalidBodyDetail[] {
  return error.issues.map((issue) => {
    const {
      input: _input,
      path,
      code,
      message,
      ...rest
    } = issue as z.core.$ZodIssue & {
      input?: unknown;
    };
    const detail: InvalidBodyDetail = {
      ...JSON.parse(JSON.stringify(rest, (_k, v) => (typeof v === 'bigint' ? String(v) : v))),
      code,
      path: path.map((key) => (typeof key === 'symbol' ? String(key) : key)),
      message,
    };
    return detail;
  });
}

/** The complete 400 body for a request that failed validation. */
export function invalidBodyError(error: z.ZodError): ErrorBody & { details: InvalidBodyDetail[] } {
  return { success: false, error: ERROR_MESSAGES.invalidBody, details: invalidBodyDetails(error) };
}
