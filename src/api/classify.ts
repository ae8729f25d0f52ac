/**
 * Turns a failed call into exactly one error class. Pure: a response is classified from its
 * status, headers and body text; a transport failure from the thrown error's code.
 *
 * | status / failure                                   | class                 |
 * |----------------------------------------------------|-----------------------|
 * | 400, 413, other 4xx not listed                     | BadRequestError       |
 * | 401                                                | UnauthorizedError     |
 * | 402                                                | PaymentRequiredError  |
 * | 403                                                | ForbiddenError        |
 * | 404                                                | NotFoundError         |
 * | 408, client headers/body timeout, timeout abort    | TimeoutError          |
 * | 429                                                | RateLimitedError      |
 * | 5xx                                                | ServerError           |
 * | 1xx, 2xx without a usable body, 3xx, parser errors | BadResponseError      |
 * | reset, refused, DNS, socket closed, other aborts   | NetworkError          |
 */
import { scrubSecrets } from '../log.ts';
import {
  ApiError,
  type ApiErrorOptions,
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
} from './errors.ts';
import { parseRetryAfterMs } from './retry-after.ts';

export interface ClassifyContext {
  /** What was called, e.g. `POST /v2/search`; starts the message when given. */
  operation?: string;
  /** Time from sending the request to the failure, in milliseconds. */
  durationMs?: number;
  /** Texts to scrub from every message and detail (the API key). */
  secrets?: readonly string[];
  /** Current time in ms since the epoch, for an HTTP-date Retry-After. Default `Date.now()`. */
  nowMs?: number;
  /** Status of an answer whose body then failed (cut short, too large, too slow). */
  status?: number;
}

export type ResponseHeaders = Record<string, string | string[] | undefined>;

/** Longest piece of a body quoted in a message, in characters. */
const MAX_QUOTED_CHARS = 500;

/**
 * Classifies a response that is not a usable success. Meant for statuses outside 2xx; a 2xx
 * given here (a success status whose body the caller could not use) is a BadResponseError.
 */
export function classifyResponse(
  status: number,
  headers: ResponseHeaders,
  bodyText: string,
  context: ClassifyContext = {},
): ApiError {
  const secrets = context.secrets ?? [];
  const body = parseJsonObject(bodyText);
  const serviceText = body && typeof body.error === 'string' ? body.error : quote(bodyText);
  const serviceCode = body && typeof body.code === 'string' ? body.code : undefined;
  const message = scrubSecrets(
    `${prefix(context)}HTTP ${status}${serviceCode ? ` ${serviceCode}` : ''}: ${serviceText || '(empty body)'}`,
    secrets,
  );
  const retryAfterMs = parseRetryAfterMs({
    header: headers['retry-after'],
    body: body ?? bodyText,
    nowMs: context.nowMs ?? Date.now(),
  });
  const options: ApiErrorOptions = { status };
  if (context.durationMs !== undefined) options.durationMs = context.durationMs;
  if (serviceCode !== undefined) options.serviceCode = serviceCode;
  if (retryAfterMs !== undefined) options.retryAfterMs = retryAfterMs;

  switch (status) {
    case 401:
      return new UnauthorizedError(message, options);
    case 402:
      return new PaymentRequiredError(message, options);
    case 403:
      return new ForbiddenError(message, options);
    case 404:
      return new NotFoundError(message, options);
    case 408:
      return new TimeoutError(message, options);
    case 429:
      return new RateLimitedError(message, options);
  }
  if (status >= 500) return new ServerError(message, options);
  if (status >= 400) {
    const details = Array.isArray(body?.details) ? scrubDetails(body.details, secrets) : undefined;
    // The details say what to fix; they belong in the message that is stored and shown.
    const described = details ? describeDetails(details) : '';
    return new BadRequestError(
      described ? `${message} (${described})` : message,
      details ? { ...options, details } : options,
    );
  }
  return new BadResponseError(message, options);
}

/** A response with a success status whose body is not what the contract promises. */
export function badResponse(
  status: number,
  reason: string,
  context: ClassifyContext = {},
  cause?: unknown,
): BadResponseError {
  const options: ApiErrorOptions = { status, cause };
  if (context.durationMs !== undefined) options.durationMs = context.durationMs;
  return new BadResponseError(
    scrubSecrets(`${prefix(context)}HTTP ${status}: ${reason}`, context.secrets ?? []),
    options,
  );
}

const TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);
const BAD_RESPONSE_CODES = new Set(['UND_ERR_HEADERS_OVERFLOW']);
/** Failures before any byte of the request left this host: such a call cost nothing. */
const NOT_SENT_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
]);
const BAD_REQUEST_CODES = new Set([
  'UND_ERR_INVALID_ARG',
  'UND_ERR_NOT_SUPPORTED',
  'ERR_INVALID_URL',
]);
const NETWORK_TEXT: Record<string, string> = {
  UND_ERR_SOCKET: 'connection closed before a complete response',
  UND_ERR_CONNECT_TIMEOUT: 'could not connect in time',
  UND_ERR_CLOSED: 'client closed',
  UND_ERR_DESTROYED: 'client destroyed',
  UND_ERR_ABORTED: 'request aborted',
  UND_ERR_RES_CONTENT_LENGTH_MISMATCH: 'response shorter or longer than its content-length',
  ECONNRESET: 'connection reset',
  ECONNREFUSED: 'connection refused',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'DNS lookup failed',
  EPIPE: 'connection closed while sending',
  ETIMEDOUT: 'connection timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ECONNABORTED: 'connection aborted',
};

/**
 * Classifies an error thrown while sending a request or reading its response (no usable
 * response). An ApiError passes through unchanged.
 */
export function classifyTransportError(error: unknown, context: ClassifyContext = {}): ApiError {
  if (error instanceof ApiError) return error;
  const code = errorCode(error);
  const name = error instanceof Error ? error.name : undefined;
  const detail = error instanceof Error ? error.message : String(error);
  const options: ApiErrorOptions = { cause: error };
  if (context.durationMs !== undefined) options.durationMs = context.durationMs;
  if (context.status !== undefined) options.status = context.status;
  if (code && NOT_SENT_CODES.has(code)) options.notSent = true;
  const say = (what: string) =>
    scrubSecrets(
      `${prefix(context)}${what}${code ? ` (${code}: ${detail})` : ` (${detail})`}`,
      context.secrets ?? [],
    );

  if ((code && TIMEOUT_CODES.has(code)) || name === 'TimeoutError') {
    return new TimeoutError(say('no response within the client timeout'), options);
  }
  if (code === 'UND_ERR_RES_EXCEEDED_MAX_SIZE') {
    return new ResponseTooLargeError(say('response larger than the client accepts'), options);
  }
  if (code?.startsWith('HPE_') || (code && BAD_RESPONSE_CODES.has(code))) {
    return new BadResponseError(say('malformed HTTP response'), options);
  }
  if (code && BAD_REQUEST_CODES.has(code)) {
    return new BadRequestError(say('request could not be sent'), options);
  }
  if (name === 'AbortError') return new NetworkError(say('request aborted'), options);
  return new NetworkError(say((code && NETWORK_TEXT[code]) ?? 'request failed'), options);
}

/** The error's code, looking into `errors[0]` (AggregateError) and `cause` when needed. */
function errorCode(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current && typeof current === 'object'; depth++) {
    const record = current as { code?: unknown; errors?: unknown; cause?: unknown };
    if (typeof record.code === 'string') return record.code;
    if (Array.isArray(record.errors) && record.errors.length > 0) current = record.errors[0];
    else current = record.cause;
  }
  return undefined;
}

function parseJsonObject(text: string): Record<string, unknown> | undefined {
  if (text.length === 0 || (text[0] !== '{' && !/^\s*\{/.test(text))) return undefined;
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === 'object' && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

function quote(text: string): string {
  const trimmed = text.trim();
  return trimmed.length > MAX_QUOTED_CHARS ? `${trimmed.slice(0, MAX_QUOTED_CHARS)}...` : trimmed;
}

/** `path: message` of each validation issue, as far as the details have them. */
function describeDetails(details: unknown[]): string {
  const parts = details.map((detail) => {
    if (typeof detail !== 'object' || detail === null) return String(detail);
    const { path, message } = detail as { path?: unknown; message?: unknown };
    const where = Array.isArray(path) && path.length > 0 ? `${path.join('.')}: ` : '';
    return `${where}${typeof message === 'string' ? message : JSON.stringify(detail)}`;
  });
  return quote(parts.join('; '));
}

function prefix(context: ClassifyContext): string {
  return context.operation ? `${context.operation}: ` : '';
}

function scrubDetails(details: unknown[], secrets: readonly string[]): unknown[] {
  if (secrets.length === 0) return details;
  const text = JSON.stringify(details);
  const scrubbed = scrubSecrets(text, secrets);
  if (scrubbed === text) return details;
  try {
    return JSON.parse(scrubbed) as unknown[];
  } catch {
    return ['[details withheld: they contained a secret]'];
  }
}
