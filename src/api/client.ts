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
import { requestToSend, type SearchRequest, type SearchResponse } from '../contract/index.ts';
import {
  badResponse,
  type ClassifyContext,
  classifyResponse,
  classifyTransportError,
} from './classify.ts';
import {
  type ActiveCrawlsResponse,
  type ParamsPreviewResponse,
  type Validate,
  validateActiveV1,
  validateActiveV2,
  validatePreview,
  validateSearch,
} from './success-body.ts';

export type { ActiveCrawlsResponse, ParamsPreviewResponse } from './success-body.ts';

/** Response headers as undici gives them (lower-case names). */
export type IncomingHttpHeaders = Dispatcher.ResponseData['headers'];

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
  /**
   * Client timeout of a search whose request sets no `timeout`, in ms. Default 65000 (the
   * service's default, 60 s, plus the slack); `HARVEST_API_TIMEOUT_MS`.
   */
  untimedSearchMs?: number;
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
   * Client timeout in ms: the whole call, from sending the request to the last byte of the
   * body, ends by it (a body that trickles too). Default: search `request.timeout +
   * timeoutSlackMs` (`untimedSearchMs` when the request sets none), other calls
   * `defaultTimeoutMs`. Expiry becomes TimeoutError.
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

/** What every call of one client shares: its connection pool and its headers. */
interface Connection {
  pool: Pool;
  getHeaders: Record<string, string>;
  postHeaders: Record<string, string>;
  /** Texts no error may quote (the API key). */
  secrets: string[];
}

function connect(origin: string, options: ApiClientOptions): Connection {
  const pool = new Pool(origin, {
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
  return { pool, getHeaders, postHeaders, secrets: [options.apiKey] };
}

/** One request, one answer: the validated body, or exactly one ApiError. */
async function call<T>(
  connection: Connection,
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
  // The whole call ends by `timeoutMs`: undici's own timeouts restart at every byte.
  const deadline = new AbortController();
  const timer = setTimeout(
    () => deadline.abort(new DOMException('the call took longer than its timeout', 'TimeoutError')),
    timeoutMs,
  );
  try {
    const response = await connection.pool.request({
      method,
      path,
      headers: payload === undefined ? connection.getHeaders : connection.postHeaders,
      body: payload ?? null,
      signal: signal ? AbortSignal.any([signal, deadline.signal]) : deadline.signal,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    });
    status = response.statusCode;
    headers = response.headers;
    text = await response.body.text();
  } catch (error) {
    // Once the status line is in, the answer's status is known even when its body broke
    // (an error answer then still costs nothing).
    const ctx = context(connection, operation, startedMs);
    const cause = deadline.signal.aborted && !signal?.aborted ? deadline.signal.reason : error;
    throw classifyTransportError(cause, status > 0 ? { ...ctx, status } : ctx);
  } finally {
    clearTimeout(timer);
  }
  const durationMs = performance.now() - startedMs;
  if (status < 200 || status > 299) {
    throw classifyResponse(
      status,
      headers,
      text,
      context(connection, operation, startedMs, durationMs),
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw badResponse(
      status,
      `malformed JSON body (${text.length} chars)`,
      context(connection, operation, startedMs, durationMs),
      error,
    );
  }
  const checked = validate(json);
  if (!checked.ok) {
    throw badResponse(
      status,
      checked.reason,
      context(connection, operation, startedMs, durationMs),
    );
  }
  return { status, durationMs, body: checked.value, headers };
}

/** What classify.ts needs to build an error of this call (never the secrets in its text). */
function context(
  connection: Connection,
  operation: string,
  startedMs: number,
  durationMs?: number,
): ClassifyContext {
  return {
    operation,
    durationMs: durationMs ?? performance.now() - startedMs,
    secrets: connection.secrets,
    nowMs: Date.now(),
  };
}

export function createApiClient(options: ApiClientOptions): ApiClient {
  const base = new URL(options.baseUrl);
  const basePath = base.pathname.replace(/\/+$/, '');
  const connection = connect(base.origin, options);
  const slackMs = options.timeoutSlackMs ?? 5000;
  const untimedSearchMs = options.untimedSearchMs ?? SEARCH_TIMEOUT_DEFAULT_MS + slackMs;
  const defaultTimeoutMs = options.defaultTimeoutMs ?? 30_000;
  const paths = {
    search: `${basePath}/v2/search`,
    activeV1: `${basePath}/v1/crawl/active`,
    activeV2: `${basePath}/v2/crawl/active`,
    preview: `${basePath}/v2/crawl/params-preview`,
  };
  let closing: Promise<void> | undefined;

  return {
    search(request, callOptions = {}) {
      const timeoutMs =
        callOptions.timeoutMs ??
        (request.timeout === undefined ? untimedSearchMs : request.timeout + slackMs);
      return call(
        connection,
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
        connection,
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
        connection,
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
      closing ??= connection.pool.close();
      return closing;
    },
  };
}
