/** The Web Data Service API client, its typed errors and the pure helpers behind them. */
export {
  badResponse,
  type ClassifyContext,
  classifyResponse,
  classifyTransportError,
  type ResponseHeaders,
} from './classify.ts';
export {
  type ActiveCrawlsResponse,
  type ApiClient,
  type ApiClientOptions,
  type ApiResponse,
  type CallOptions,
  createApiClient,
  type IncomingHttpHeaders,
  type ParamsPreviewResponse,
} from './client.ts';
export {
  ApiError,
  type ApiErrorCode,
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
export { parseRetryAfterMs, RETRY_AFTER_CAP_MS, type RetryAfterInput } from './retry-after.ts';
