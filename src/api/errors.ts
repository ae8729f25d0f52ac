/**
 * Typed outcomes of a failed API call. The client throws exactly one of these for every
 * failure; `decideRetry` (src/api/backoff.ts) turns each into what the runner does.
 *
 * Messages carry the HTTP status and the service's `error` text, never the API key: the
 * client scrubs every text it puts into an error with the key it holds.
 */
import { HarvestError } from '../errors.ts';

/** Stable codes of API errors, one per class. */
export type ApiErrorCode =
  | 'RATE_LIMITED'
  | 'TIMEOUT'
  | 'SERVER_ERROR'
  | 'NETWORK'
  | 'BAD_RESPONSE'
  | 'RESPONSE_TOO_LARGE'
  | 'BAD_REQUEST'
  | 'FORBIDDEN'
  | 'NOT_FOUND'
  | 'UNAUTHORIZED'
  | 'PAYMENT_REQUIRED';

export interface ApiErrorOptions {
  /** HTTP status of the response; absent when no response arrived. */
  status?: number;
  /** Time from sending the request to the failure, in milliseconds. */
  durationMs?: number;
  /** The service's own code from the body (`UNKNOWN_ERROR`, `SCRAPE_NO_CACHED_DATA`, ...). */
  serviceCode?: string;
  /** When the service asked to wait before trying again (Retry-After, body, message), in ms. */
  retryAfterMs?: number;
  /**
   * The request never left this host (connection refused, DNS failure, no connection in
   * time): the service saw nothing, so the call cost nothing.
   */
  notSent?: boolean;
  cause?: unknown;
}

/** Base of every API failure. `code` is stable; match on it or on the class. */
export abstract class ApiError extends HarvestError {
  declare readonly code: ApiErrorCode;
  readonly status?: number;
  readonly durationMs?: number;
  readonly serviceCode?: string;
  readonly retryAfterMs?: number;
  /** True when the request never reached the service (see ApiErrorOptions). */
  readonly notSent: boolean;

  constructor(code: ApiErrorCode, message: string, options: ApiErrorOptions = {}) {
    super(code, message, { cause: options.cause });
    this.notSent = options.notSent ?? false;
    if (options.status !== undefined) this.status = options.status;
    if (options.durationMs !== undefined) this.durationMs = options.durationMs;
    if (options.serviceCode !== undefined) this.serviceCode = options.serviceCode;
    if (options.retryAfterMs !== undefined) this.retryAfterMs = options.retryAfterMs;
  }

  /** Plain fields for logs and call records; no cause, no stack, no secret. */
  toJSON(): Record<string, unknown> {
    return {
      name: this.name,
      code: this.code,
      message: this.message,
      status: this.status,
      serviceCode: this.serviceCode,
      retryAfterMs: this.retryAfterMs,
      durationMs: this.durationMs,
    };
  }
}

/**
 * 429: the plan's rate or concurrency limit was exceeded. The runner sets the queue's global
 * rate limit for `retryAfterMs` (or a default) and re-queues the job without spending an attempt.
 */
export class RateLimitedError extends ApiError {
  constructor(message: string, options: ApiErrorOptions = {}) {
    super('RATE_LIMITED', message, options);
    this.name = 'RateLimitedError';
  }
}

/**
 * 408 from the service, or the client's own timeout. The runner retries with backoff until the
 * job's attempts are used up.
 */
export class TimeoutError extends ApiError {
  constructor(message: string, options: ApiErrorOptions = {}) {
    super('TIMEOUT', message, options);
    this.name = 'TimeoutError';
  }
}

/**
 * 5xx. `serviceCode` keeps the body's code (e.g. `UNKNOWN_ERROR`). The runner retries with
 * backoff until the job's attempts are used up.
 */
export class ServerError extends ApiError {
  constructor(message: string, options: ApiErrorOptions = {}) {
    super('SERVER_ERROR', message, options);
    this.name = 'ServerError';
  }
}

/**
 * No response: connection reset or refused, DNS failure, socket closed before a complete
 * response. The runner retries with backoff until the job's attempts are used up.
 */
export class NetworkError extends ApiError {
  constructor(message: string, options: ApiErrorOptions = {}) {
    super('NETWORK', message, options);
    this.name = 'NetworkError';
  }
}

/**
 * A response harvest cannot use: malformed JSON, an off-contract 2xx body, or a status the
 * contract does not know. The runner retries with backoff until the job's attempts are used up.
 */
export class BadResponseError extends ApiError {
  constructor(message: string, options: ApiErrorOptions = {}) {
    super('BAD_RESPONSE', message, options);
    this.name = 'BadResponseError';
  }
}

/**
 * A response larger than the client's cap (`maxResponseBytes`): read no further, so it can
 * never exhaust the worker's memory. The runner fails the job for good: calling again would be
 * billed again for the same oversized answer.
 */
export class ResponseTooLargeError extends ApiError {
  constructor(message: string, options: ApiErrorOptions = {}) {
    super('RESPONSE_TOO_LARGE', message, options);
    this.name = 'ResponseTooLargeError';
  }
}

/**
 * 400 (invalid body, malformed JSON), 413 (body too large) and other 4xx the contract does not
 * name. `details` keeps the service's validation issues. The runner fails the job for good and
 * records why.
 */
export class BadRequestError extends ApiError {
  readonly details?: unknown[];

  constructor(message: string, options: ApiErrorOptions & { details?: unknown[] } = {}) {
    super('BAD_REQUEST', message, options);
    this.name = 'BadRequestError';
    if (options.details !== undefined) this.details = options.details;
  }

  override toJSON(): Record<string, unknown> {
    return { ...super.toJSON(), details: this.details };
  }
}

/** 403 (e.g. threat protection not enabled for the team). The runner fails the job for good. */
export class ForbiddenError extends ApiError {
  constructor(message: string, options: ApiErrorOptions = {}) {
    super('FORBIDDEN', message, options);
    this.name = 'ForbiddenError';
  }
}

/**
 * 404; `serviceCode` keeps the body code (`SCRAPE_NO_CACHED_DATA`,
 * `SCRAPE_LOCKDOWN_CACHE_MISS`). The runner fails the job for good.
 */
export class NotFoundError extends ApiError {
  constructor(message: string, options: ApiErrorOptions = {}) {
    super('NOT_FOUND', message, options);
    this.name = 'NotFoundError';
  }
}

/**
 * 401: missing or unknown API key. The runner pauses the run's queue and tells the user to
 * check HARVEST_API_KEY, then resume the run.
 */
export class UnauthorizedError extends ApiError {
  constructor(message: string, options: ApiErrorOptions = {}) {
    super('UNAUTHORIZED', message, options);
    this.name = 'UnauthorizedError';
  }
}

/**
 * 402: no credits left. The runner pauses the run's queue and tells the user to add credits,
 * then resume the run.
 */
export class PaymentRequiredError extends ApiError {
  constructor(message: string, options: ApiErrorOptions = {}) {
    super('PAYMENT_REQUIRED', message, options);
    this.name = 'PaymentRequiredError';
  }
}
