/**
 * HTTP client of the Web Data Service API, on an undici connection pool with keep-alive.
 *
 * One call, one answer: every failure becomes exactly one ApiError subclass (see classify.ts)
 * and there is no retry loop here; retries belong to the job (src/api/backoff.ts). Success
 * bodies are parsed once and validated with the contract; an off-contract 2xx body is a
 * BadResponseError.
 */
import { performance } from 'node:perf_hooks';
import { type Dispatcher, Pool } from 'undici';
import type { z } from 'zod';
import {
  ActiveCrawlsResponseV1Schema,
  ActiveCrawlsResponseV2Schema,
  normaliseV1Crawl,
  ParamsPreviewResponseSchema,
  requestToSend,
  type SearchRequest,
  type SearchResponse,
  SearchResponseSchema,
} from '../contract/index.ts';
import {
  badResponse,
  type ClassifyContext,
  classifyResponse,
  classifyTransportError,
} from './classify.ts';

/** Response headers as undici gives them (lower-case names). */
export type IncomingHttpHeaders = Dispatcher.ResponseData['headers'];
export type ActiveCrawlsResponse = z.infer<typeof ActiveCrawlsResponseV2Schema>;
export type ParamsPreviewResponse = z.infer<typeof ParamsPreviewResponseSchema>;

export interface ApiClientOptions {
  /** Base address of the service, e.g. `https://api.example.com`; a path prefix is kept. */
  baseUrl: string;
  /** Sent as `Authorization: Bearer <apiKey>`; never appears in errors. */
  apiKey: string;
  /** Most connections kept open to the service. Default 64. */
  connections?: number;
  /** Requests in flight per connection (HTTP/1.1 pipelining). Default 1 (none). */
  pipelining?: number;
  /** `User-Agent` header. Default `harvest`. */
  userAgent?: string;
  /** Added to a search's own `timeout` to get the client timeout, in ms. Default 5000. */
  timeoutSlackMs?: number;
  /** Client timeout of calls other than search, in ms. Default 30000. */
  defaultTimeoutMs?: number;
  /**
   * How long an idle connection stays open when the server gives no keep-alive hint, in ms.
   * Default 4000 (undici's), short enough to close before most servers do.
   */
  keepAliveTimeoutMs?: number;
  /** Longest wait to open a connection, in ms. Default 10000. */
  connectTimeoutMs?: number;
  /**
   * Largest response body read, in bytes; a larger one fails as ResponseTooLargeError before
   * it is held in memory. Default 64 MiB (`DEFAULT_MAX_RESPONSE_BYTES`).
   */
  maxResponseBytes?: number;
}

/** Default cap of a response body: far above any search answer, far below a worker's heap. */
export const DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024 * 1024;

export interface CallOptions {
  /** Aborts the call; an abort with a `TimeoutError` reason becomes TimeoutError, others NetworkError. */
  signal?: AbortSignal;
  /**
   * Client timeout in ms: the longest wait for the response headers, and again for each
   * pause in the body. Default: search `(request.timeout ?? 60000) + timeoutSlackMs`, other
   * calls `defaultTimeoutMs`. Expiry becomes TimeoutError.
   */
  timeoutMs?: number;
}

/** A successful call: the validated body and how long the call took. */
export interface ApiResponse<T> {
  status: number;
  /** From sending the request to the end of the body, in ms (fractional). */
  durationMs: number;
  body: T;
  headers: IncomingHttpHeaders;
}

export interface ApiClient {
  /** POST /v2/search. */
  search(request: SearchRequest, options?: CallOptions): Promise<ApiResponse<SearchResponse>>;
  /** GET /v2/crawl/active or /v1/crawl/active; records are normalised to the v2 shape. */
  activeCrawls(
    options: { version: 'v1' | 'v2' } & CallOptions,
  ): Promise<ApiResponse<ActiveCrawlsResponse>>;
  /** POST /v2/crawl/params-preview. */
  paramsPreview(
    input: { url: string; prompt: string },
    options?: CallOptions,
  ): Promise<ApiResponse<ParamsPreviewResponse>>;
  /** Closes every connection once calls in flight have finished. */
  close(): Promise<void>;
}

/** Default search timeout of the contract, in ms. */
const SEARCH_TIMEOUT_DEFAULT_MS = 60_000;

type Validate<T> = (value: unknown) => { ok: true; value: T } | { ok: false; reason: string };

export function createApiClient(options: ApiClientOptions): ApiClient {
  const base = new URL(options.baseUrl);
  const basePath = base.pathname.replace(/\/+$/, '');
  const secrets = [options.apiKey];
  const slackMs = options.timeoutSlackMs ?? 5000;
  const defaultTimeoutMs = options.defaultTimeoutMs ?? 30_000;
  const pool = new Pool(base.origin, {
    connections: options.connections ?? 64,
    pipelining: options.pipelining ?? 1,
    keepAliveTimeout: options.keepAliveTimeoutMs ?? 4000,
    connect: { timeout: options.connectTimeoutMs ?? 10_000 },
    maxResponseSize: options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES,
  });
  const getHeaders: Record<string, string> = {
    authorization: `Bearer ${options.apiKey}`,
    accept: 'application/json',
    'user-agent': options.userAgent ?? 'harvest',
  };
  const postHeaders: Record<string, string> = { ...getHeaders, 'content-type': 'application/json' };
  const paths = {
    search: `${basePath}/v2/search`,
    activeV1: `${basePath}/v1/crawl/active`,
    activeV2: `${basePath}/v2/crawl/active`,
    preview: `${basePath}/v2/crawl/params-preview`,
  };
  let closing: Promise<void> | undefined;

  async function call<T>(
    method: 'GET' | 'POST',
    path: string,
    operation: string,
    payload: string | undefined,
    timeoutMs: number,
    signal: AbortSignal | undefined,
    validate: Validate<T>,
  ): Promise<ApiResponse<T>> {
    const startedMs = performance.now();
    let status = 0;
    let headers: IncomingHttpHeaders;
    let text: string;
    try {
      const response = await pool.request({
        method,
        path,
        headers: payload === undefined ? getHeaders : postHeaders,
        body: payload ?? null,
        signal: signal ?? null,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      });
      status = response.statusCode;
      headers = response.headers;
      text = await response.body.text();
    } catch (error) {
      // Once the status line is in, the answer's status is known even when its body broke
      // (an error answer then still costs nothing).
      const ctx = context(operation, startedMs);
      throw classifyTransportError(error, status > 0 ? { ...ctx, status } : ctx);
    }
    const durationMs = performance.now() - startedMs;
    if (status < 200 || status > 299) {
      throw classifyResponse(status, headers, text, context(operation, startedMs, durationMs));
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch (error) {
      throw badResponse(
        status,
        `malformed JSON body (${text.length} chars)`,
        context(operation, startedMs, durationMs),
        error,
      );
    }
    const checked = validate(json);
    if (!checked.ok) {
      throw badResponse(status, checked.reason, context(operation, startedMs, durationMs));
    }
    return { status, durationMs, body: checked.value, headers };
  }

  function context(operation: string, startedMs: number, durationMs?: number): ClassifyContext {
    return {
      operation,
      durationMs: durationMs ?? performance.now() - startedMs,
      secrets,
      nowMs: Date.now(),
    };
  }

  return {
    search(request, callOptions = {}) {
      const timeoutMs =
        callOptions.timeoutMs ?? (request.timeout ?? SEARCH_TIMEOUT_DEFAULT_MS) + slackMs;
      return call(
        'POST',
        paths.search,
        'POST /v2/search',
        JSON.stringify(requestToSend(request)),
        timeoutMs,
        callOptions.signal,
        validateSearch,
      );
    },

    activeCrawls(callOptions) {
      const v1 = callOptions.version === 'v1';
      return call(
        'GET',
        v1 ? paths.activeV1 : paths.activeV2,
        v1 ? 'GET /v1/crawl/active' : 'GET /v2/crawl/active',
        undefined,
        callOptions.timeoutMs ?? defaultTimeoutMs,
        callOptions.signal,
        v1 ? validateActiveV1 : validateActiveV2,
      );
    },

    paramsPreview(input, callOptions = {}) {
      return call(
        'POST',
        paths.preview,
        'POST /v2/crawl/params-preview',
        JSON.stringify({ url: input.url, prompt: input.prompt }),
        callOptions.timeoutMs ?? defaultTimeoutMs,
        callOptions.signal,
        validatePreview,
      );
    },

    close() {
      closing ??= pool.close();
      return closing;
    },
  };
}

/** A 2xx body with `success: false` is off-contract; its `error` text says why. */
function failedSuccess(value: unknown): string | undefined {
  if (value === null || typeof value !== 'object') return 'body is not a JSON object';
  const record = value as Record<string, unknown>;
  if (record.success === false) {
    return `success status with success:false${typeof record.error === 'string' ? `: ${record.error}` : ''}`;
  }
  return undefined;
}

function schemaValidator<T>(schema: z.ZodType<T>, what: string): Validate<T> {
  return (value) => {
    const failed = failedSuccess(value);
    if (failed) return { ok: false, reason: failed };
    const result = schema.safeParse(value);
    if (result.success) return { ok: true, value: result.data };
    return {
      ok: false,
      reason: `${what} does not match the contract: ${firstIssue(result.error)}`,
    };
  };
}

function firstIssue(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return 'invalid';
  const path = issue.path.length > 0 ? issue.path.join('.') : '(root)';
  const more = error.issues.length > 1 ? ` (+${error.issues.length - 1} more)` : '';
  return `${path}: ${issue.message}${more}`;
}

const validateSearch: Validate<SearchResponse> = schemaValidator(
  SearchResponseSchema as z.ZodType<SearchResponse>,
  'search response',
);
const validateActiveV2: Validate<ActiveCrawlsResponse> = schemaValidator(
  ActiveCrawlsResponseV2Schema as z.ZodType<ActiveCrawlsResponse>,
  'active crawls (v2)',
);
const validatePreview: Validate<ParamsPreviewResponse> = schemaValidator(
  ParamsPreviewResponseSchema as z.ZodType<ParamsPreviewResponse>,
  'params preview',
);

/**
 * v1 answers use the v1 scrape-option names in the reference, but real ones may carry v2
 * names: accept either, and hand back v2 records.
 */
const validateActiveV1: Validate<ActiveCrawlsResponse> = (value) => {
  const failed = failedSuccess(value);
  if (failed) return { ok: false, reason: failed };
  const v1 = ActiveCrawlsResponseV1Schema.safeParse(value);
  if (v1.success) {
    return { ok: true, value: { ...v1.data, crawls: v1.data.crawls.map(normaliseV1Crawl) } };
  }
  const v2 = ActiveCrawlsResponseV2Schema.safeParse(value);
  if (v2.success) return { ok: true, value: v2.data };
  return {
    ok: false,
    reason: `active crawls (v1) does not match the contract: ${firstIssue(v1.error)}`,
  };
};
