import { describe, expect, it } from 'vitest';
import {
  ERROR_MESSAGES,
  ErrorBodySchema,
  invalidBodyDetails,
  invalidBodyError,
  RATE_LIMIT_RETRY_AFTER_PATTERN,
  rateLimitMessage,
  SearchRequestSchema,
  unknownErrorMessage,
  utcDateString,
} from '../../../src/contract/index.ts';

describe('rateLimitMessage', () => {
  const message = rateLimitMessage({
    consumed: 101,
    remaining: 0,
    retryAfterS: 27,
    resetsAt: new Date('2026-11-22T10:15:00Z'),
  });

  it('is the exact hosted-service text', () => {
    expect(message).toBe(
      'Rate limit exceeded. Consumed (req/min): 101, Remaining (req/min): 0. Upgrade your plan at https://firecrawl.dev/pricing for increased rate limits or please retry after 27s, resets at Sun Nov 22 2026 10:15:00 GMT+0000 (Coordinated Universal Time)',
    );
  });

  it('gives the seconds back through the retry-after pattern', () => {
    expect(RATE_LIMIT_RETRY_AFTER_PATTERN.exec(message)?.[1]).toBe('27');
    expect(/retry after (\d+)s/.exec(message)?.[1]).toBe('27');
  });

  it('prints dates in UTC with zero-padded fields', () => {
    expect(utcDateString(new Date('2026-01-05T03:04:05.999Z'))).toBe(
      'Mon Jan 05 2026 03:04:05 GMT+0000 (Coordinated Universal Time)',
    );
  });
});

describe('ERROR_MESSAGES', () => {
  it('holds the exact strings', () => {
    expect(ERROR_MESSAGES.invalidBody).toBe('Invalid request body');
    expect(ERROR_MESSAGES.malformedJson).toBe('Bad request, malformed JSON');
    expect(ERROR_MESSAGES.tooLarge).toBe('Request body is too large');
    expect(ERROR_MESSAGES.tokenMissing).toBe('Unauthorized: Token missing');
    expect(ERROR_MESSAGES.invalidToken).toBe('Unauthorized: Invalid token');
    expect(ERROR_MESSAGES.insufficientCredits).toBe(
      'Insufficient credits to perform this request. For more credits, you can upgrade your plan at https://firecrawl.dev/pricing or try changing the request limit to a lower value.',
    );
    expect(unknownErrorMessage('abc')).toMatch(/^An unexpected error occurred\. .*abc$/);
  });
});

describe('ErrorBodySchema', () => {
  it('parses the error bodies of api-notes', () => {
    for (const body of [
      { success: false, error: 'Invalid request body', details: [] },
      { success: false, code: 'BAD_REQUEST_INVALID_JSON', error: 'Bad request, malformed JSON' },
      { success: false, error: 'x', retry_after_seconds: 3 },
      { success: false, error: 'x', unexpected: true },
    ]) {
      expect(ErrorBodySchema.safeParse(body).success).toBe(true);
    }
    expect(ErrorBodySchema.safeParse({ success: true, error: 'x' }).success).toBe(false);
    expect(ErrorBodySchema.safeParse({ success: false }).success).toBe(false);
  });
});

describe('invalidBodyError', () => {
  it('lists zod-style issues with code, path and message', () => {
    const result = SearchRequestSchema.safeParse({
      query: 'q',
      limit: 101,
      extra: 1,
      includeDomains: ['a.com'],
      excludeDomains: ['b.com'],
    });
    if (result.success) throw new Error('expected a failure');
    const body = invalidBodyError(result.error);
    expect(ErrorBodySchema.parse(body)).toEqual(body);
    expect(JSON.parse(JSON.stringify(body))).toMatchInlineSnapshot(`
      {
        "details": [
          {
            "code": "too_big",
            "inclusive": true,
            "maximum": 100,
            "message": "Too big: expected number to be <=100",
            "origin": "number",
            "path": [
              "limit",
            ],
          },
          {
            "code": "unrecognized_keys",
            "keys": [
              "extra",
            ],
            "message": "Unrecognized key: "extra"",
            "path": [],
          },
          {
            "code": "custom",
            "message": "includeDomains and excludeDomains cannot both be specified",
            "path": [],
          },
        ],
        "error": "Invalid request body",
        "success": false,
      }
    `);
    expect(invalidBodyDetails(result.error)).toEqual(body.details);
  });
});
