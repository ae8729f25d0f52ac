import { describe, expect, it } from 'vitest';
import { classifyResponse, classifyTransportError } from '../../../src/api/classify.ts';
import {
  ApiError,
  BadRequestError,
  BadResponseError,
  ForbiddenError,
  NetworkError,
  NotFoundError,
  PaymentRequiredError,
  RateLimitedError,
  ResponseTooLargeError,
  ServerError,
  TimeoutError,
  UnauthorizedError,
} from '../../../src/api/errors.ts';
import { HarvestError } from '../../../src/errors.ts';

const KEY = 'fc-secret-key-1234567890';
const NOW = Date.parse('2026-11-22T10:14:33Z');
const json = (value: unknown) => JSON.stringify(value);

// Bodies exactly as the hosted service sends them (api-notes.md).
const BODIES = {
  invalid: json({
    success: false,
    error: 'Invalid request body',
    details: [
      { code: 'too_big', path: ['limit'], message: 'Too big: expected number to be <=100' },
    ],
  }),
  malformedJson: json({
    success: false,
    code: 'BAD_REQUEST_INVALID_JSON',
    error: 'Bad request, malformed JSON',
  }),
  tooLarge: json({ success: false, error: 'Request body is too large' }),
  tokenMissing: json({ success: false, error: 'Unauthorized: Token missing' }),
  invalidToken: json({ success: false, error: 'Unauthorized: Invalid token' }),
  noCredits: json({
    success: false,
    error:
      'Insufficient credits to perform this request. For more credits, you can upgrade your plan at https://firecrawl.dev/pricing or try changing the request limit to a lower value.',
  }),
  threat: json({
    success: false,
    error: 'Threat protection is an enterprise feature and is not enabled for your team. ...',
  }),
  noCache: json({ success: false, code: 'SCRAPE_NO_CACHED_DATA', error: 'No cached data' }),
  rateLimit: json({
    success: false,
    error:
      'Rate limit exceeded. Consumed (req/min): 101, Remaining (req/min): 0. Upgrade your plan at https://firecrawl.dev/pricing for increased rate limits or please retry after 27s, resets at Sun Nov 22 2026 10:15:00 GMT+0000 (Coordinated Universal Time)',
  }),
  timeout: json({
    success: false,
    code: 'SCRAPE_TIMEOUT',
    error: 'The scrape operation timed out before completing. ...',
  }),
  handler500: json({ success: false, error: 'boom' }),
  unknown500: json({
    success: false,
    code: 'UNKNOWN_ERROR',
    error: 'An unexpected error occurred. ... Your exception ID is 0199-abc',
  }),
};

describe('classifyResponse', () => {
  it.each([
    [400, BODIES.invalid, BadRequestError, 'BAD_REQUEST', undefined],
    [400, BODIES.malformedJson, BadRequestError, 'BAD_REQUEST', 'BAD_REQUEST_INVALID_JSON'],
    [413, BODIES.tooLarge, BadRequestError, 'BAD_REQUEST', undefined],
    [422, '', BadRequestError, 'BAD_REQUEST', undefined],
    [401, BODIES.tokenMissing, UnauthorizedError, 'UNAUTHORIZED', undefined],
    [401, BODIES.invalidToken, UnauthorizedError, 'UNAUTHORIZED', undefined],
    [402, BODIES.noCredits, PaymentRequiredError, 'PAYMENT_REQUIRED', undefined],
    [403, BODIES.threat, ForbiddenError, 'FORBIDDEN', undefined],
    [404, BODIES.noCache, NotFoundError, 'NOT_FOUND', 'SCRAPE_NO_CACHED_DATA'],
    [408, BODIES.timeout, TimeoutError, 'TIMEOUT', 'SCRAPE_TIMEOUT'],
    [429, BODIES.rateLimit, RateLimitedError, 'RATE_LIMITED', undefined],
    [500, BODIES.handler500, ServerError, 'SERVER_ERROR', undefined],
    [500, BODIES.unknown500, ServerError, 'SERVER_ERROR', 'UNKNOWN_ERROR'],
    [502, '<html>Bad Gateway</html>', ServerError, 'SERVER_ERROR', undefined],
    [503, '', ServerError, 'SERVER_ERROR', undefined],
    [301, '', BadResponseError, 'BAD_RESPONSE', undefined],
    [200, '{"success":false}', BadResponseError, 'BAD_RESPONSE', undefined],
  ] as const)('HTTP %i %s -> %o', (status, body, cls, code, serviceCode) => {
    const error = classifyResponse(status, {}, body, { nowMs: NOW });
    expect(error).toBeInstanceOf(cls);
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toBeInstanceOf(HarvestError);
    expect(error.code).toBe(code);
    expect(error.name).toBe(cls.name);
    expect(error.status).toBe(status);
    expect(error.serviceCode).toBe(serviceCode);
    expect(error.message).toContain(`HTTP ${status}`);
  });

  it('puts the operation, status, service code and error text in the message', () => {
    const error = classifyResponse(500, {}, BODIES.unknown500, {
      operation: 'POST /v2/search',
      durationMs: 12,
    });
    expect(error.message).toBe(
      'POST /v2/search: HTTP 500 UNKNOWN_ERROR: An unexpected error occurred. ... Your exception ID is 0199-abc',
    );
    expect(error.durationMs).toBe(12);
    expect(classifyResponse(503, {}, '').message).toBe('HTTP 503: (empty body)');
  });

  it('quotes at most 500 characters of a non-JSON body', () => {
    const error = classifyResponse(502, {}, 'x'.repeat(10_000));
    expect(error.message.length).toBeLessThan(530);
    expect(error.message.endsWith('...')).toBe(true);
  });

  it('keeps the validation details of a 400', () => {
    const error = classifyResponse(400, {}, BODIES.invalid);
    expect(error).toBeInstanceOf(BadRequestError);
    expect((error as BadRequestError).details).toEqual([
      { code: 'too_big', path: ['limit'], message: 'Too big: expected number to be <=100' },
    ]);
    expect(JSON.parse(JSON.stringify(error)).details).toHaveLength(1);
    expect(error.message).toBe(
      'HTTP 400: Invalid request body (limit: Too big: expected number to be <=100)',
    );
  });

  it('reads the wait of a 429 from the message text', () => {
    const error = classifyResponse(429, {}, BODIES.rateLimit, { nowMs: NOW });
    expect(error.retryAfterMs).toBe(27_000);
  });

  it('reads the wait of a 429 from a Retry-After header, in seconds or as a date', () => {
    expect(classifyResponse(429, { 'retry-after': '3' }, BODIES.rateLimit).retryAfterMs).toBe(
      3_000,
    );
    const date = new Date(NOW + 45_000).toUTCString();
    const error = classifyResponse(429, { 'retry-after': date }, '{}', { nowMs: NOW });
    expect(error.retryAfterMs).toBe(45_000);
  });

  it('reads retry_after_seconds of a keyless-tier 429', () => {
    const body = json({ success: false, error: 'Rate limit exceeded', retry_after_seconds: 8 });
    expect(classifyResponse(429, {}, body).retryAfterMs).toBe(8_000);
  });

  it('keeps a Retry-After hint on a 503', () => {
    expect(classifyResponse(503, { 'retry-after': '10' }, '').retryAfterMs).toBe(10_000);
  });

  it('never lets the API key into the message, details or JSON', () => {
    const leaky = json({
      success: false,
      error: `Unauthorized: Invalid token ${KEY}`,
      details: [{ message: `bad key ${KEY}` }],
    });
    for (const status of [400, 401, 402, 403, 404, 408, 429, 500]) {
      const error = classifyResponse(status, {}, leaky, { secrets: [KEY] });
      expect(error.message).not.toContain(KEY);
      expect(error.stack ?? '').not.toContain(KEY);
      expect(JSON.stringify(error)).not.toContain(KEY);
      expect(error.message).toContain('[redacted]');
    }
  });
});

describe('classifyTransportError', () => {
  const withCode = (code: string, message = 'boom') => Object.assign(new Error(message), { code });
  const abort = (name: string) => new DOMException('aborted', name);

  it.each([
    [withCode('UND_ERR_HEADERS_TIMEOUT'), TimeoutError],
    [withCode('UND_ERR_BODY_TIMEOUT'), TimeoutError],
    [abort('TimeoutError'), TimeoutError],
    [withCode('UND_ERR_SOCKET', 'other side closed'), NetworkError],
    [withCode('ECONNRESET'), NetworkError],
    [withCode('ECONNREFUSED'), NetworkError],
    [withCode('ENOTFOUND'), NetworkError],
    [withCode('EAI_AGAIN'), NetworkError],
    [withCode('UND_ERR_CONNECT_TIMEOUT'), NetworkError],
    [withCode('UND_ERR_CLOSED'), NetworkError],
    [withCode('UND_ERR_ABORTED'), NetworkError],
    [abort('AbortError'), NetworkError],
    [Object.assign(new AggregateError([withCode('ECONNREFUSED')]), {}), NetworkError],
    [new Error('wrapped', { cause: withCode('ECONNRESET') }), NetworkError],
    [new Error('no code at all'), NetworkError],
    ['a string', NetworkError],
    [withCode('HPE_INVALID_CONSTANT'), BadResponseError],
    [withCode('UND_ERR_RES_EXCEEDED_MAX_SIZE'), ResponseTooLargeError],
    [withCode('UND_ERR_INVALID_ARG'), BadRequestError],
  ] as const)('%o -> %o', (thrown, cls) => {
    const error = classifyTransportError(thrown, { operation: 'POST /v2/search', durationMs: 3 });
    expect(error).toBeInstanceOf(cls);
    expect(error.status).toBeUndefined();
    expect(error.durationMs).toBe(3);
    expect(error.cause).toBe(thrown);
    expect(error.message.startsWith('POST /v2/search: ')).toBe(true);
  });

  it('marks failures before the request left this host as not sent (they cost nothing)', () => {
    for (const code of ['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'UND_ERR_CONNECT_TIMEOUT']) {
      expect(classifyTransportError(withCode(code)).notSent).toBe(true);
    }
    for (const code of ['ECONNRESET', 'UND_ERR_SOCKET', 'UND_ERR_HEADERS_TIMEOUT']) {
      expect(classifyTransportError(withCode(code)).notSent).toBe(false);
    }
  });

  it('names the failure and the code', () => {
    const error = classifyTransportError(
      withCode('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:1'),
    );
    expect(error.message).toBe(
      'connection refused (ECONNREFUSED: connect ECONNREFUSED 127.0.0.1:1)',
    );
  });

  it('passes an ApiError through unchanged', () => {
    const original = new ServerError('HTTP 500: x', { status: 500 });
    expect(classifyTransportError(original)).toBe(original);
  });

  it('scrubs the key from transport messages', () => {
    const error = classifyTransportError(withCode('ECONNRESET', `reset while sending ${KEY}`), {
      secrets: [KEY],
    });
    expect(error.message).not.toContain(KEY);
    expect(JSON.stringify(error)).not.toContain(KEY);
  });
});
