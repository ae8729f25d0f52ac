/**
 * Why a media download failed, and what to do about it. Every failure of a download becomes one
 * MediaError whose `next` the media job acts on:
 *
 * | failure                                                  | code                    | next    |
 * |----------------------------------------------------------|-------------------------|---------|
 * | media host answers 400, 401 or 403 (expired or invalid signature) | MEDIA_URL_REFUSED | reissue |
 * | 408, 425, 429, 5xx; connection reset, refused, timed out | MEDIA_TRANSIENT         | retry   |
 * | transfer not done by its deadline (download.ts)          | MEDIA_TRANSIENT         | retry   |
 * | the disk is full (ENOSPC, EDQUOT)                        | MEDIA_DISK_FULL         | pause   |
 * | the worker stops (its pool closes)                       | MEDIA_INTERRUPTED       | stop    |
 * | 404, 410, other 4xx                                      | MEDIA_HTTP_ERROR        | fail    |
 * | not http(s), credentials in the URL, unparsable          | MEDIA_URL_INVALID       | fail    |
 * | host resolves to a refused address (address.ts)          | MEDIA_ADDRESS_REFUSED   | fail    |
 * | more than the allowed redirects, redirect without Location | MEDIA_REDIRECT_REFUSED | fail   |
 * | larger than `media.maxBytes`                             | MEDIA_TOO_LARGE         | fail    |
 * | content type not of the kind, or bytes that disagree     | MEDIA_TYPE_REFUSED      | fail    |
 *
 * A refusal's message carries the host's own reason: the `Code` and `Message` of the Cloud
 * Storage (or S3) XML error body, e.g. `403 SignatureDoesNotMatch: The request signature ...`.
 */
import { HarvestError } from '../errors.ts';

/**
 * `pause`: the fault is this host's, not the URL's: the media queue pauses with the reason and
 * no attempt is spent. `stop`: the row is left pending for the next worker, no attempt spent.
 */
export type MediaNext = 'retry' | 'reissue' | 'fail' | 'pause' | 'stop';

export type MediaErrorCode =
  | 'MEDIA_URL_REFUSED'
  | 'MEDIA_TRANSIENT'
  | 'MEDIA_HTTP_ERROR'
  | 'MEDIA_URL_INVALID'
  | 'MEDIA_ADDRESS_REFUSED'
  | 'MEDIA_REDIRECT_REFUSED'
  | 'MEDIA_TOO_LARGE'
  | 'MEDIA_TYPE_REFUSED'
  | 'MEDIA_DISK_FULL'
  | 'MEDIA_INTERRUPTED';

const NEXT: Record<MediaErrorCode, MediaNext> = {
  MEDIA_URL_REFUSED: 'reissue',
  MEDIA_TRANSIENT: 'retry',
  MEDIA_HTTP_ERROR: 'fail',
  MEDIA_URL_INVALID: 'fail',
  MEDIA_ADDRESS_REFUSED: 'fail',
  MEDIA_REDIRECT_REFUSED: 'fail',
  MEDIA_TOO_LARGE: 'fail',
  MEDIA_TYPE_REFUSED: 'fail',
  MEDIA_DISK_FULL: 'pause',
  MEDIA_INTERRUPTED: 'stop',
};

/** Error codes of a file system with no room left. */
const DISK_FULL_CODES = new Set(['ENOSPC', 'EDQUOT']);

export class MediaError extends HarvestError {
  declare readonly code: MediaErrorCode;
  /** What the media job does next: retry later, get a fresh URL, or give up. */
  readonly next: MediaNext;
  /** HTTP status of the media host's answer, when there was one. */
  readonly status: number | undefined;
  /** The host's wait hint (Retry-After), in ms. */
  readonly retryAfterMs: number | undefined;
  /** The host's own error code (`ExpiredToken`, `SignatureDoesNotMatch`, ...), when it sent one. */
  readonly hostCode: string | undefined;

  constructor(
    code: MediaErrorCode,
    message: string,
    options: { status?: number; retryAfterMs?: number; hostCode?: string; cause?: unknown } = {},
  ) {
    super(code, message, options.cause === undefined ? {} : { cause: options.cause });
    this.name = 'MediaError';
    this.next = NEXT[code];
    this.status = options.status;
    this.retryAfterMs = options.retryAfterMs;
    this.hostCode = options.hostCode;
  }
}

/** `Code` and `Message` of an XML error body (Cloud Storage, S3); undefined when absent. */
export function hostReason(body: string): { code?: string; message?: string } {
  const tag = (name: string) =>
    new RegExp(`<${name}>([^<]{0,1000})</${name}>`).exec(body)?.[1]?.trim() || undefined;
  const code = tag('Code');
  const message = tag('Message');
  const details = tag('Details');
  return {
    ...(code ? { code } : {}),
    ...(message || details ? { message: [message, details].filter(Boolean).join(' ') } : {}),
  };
}

/** The error for a media host's non-2xx, non-redirect answer. Pure. */
export function errorForStatus(
  status: number,
  body: string,
  retryAfterMs: number | undefined,
): MediaError {
  const reason = hostReason(body);
  const text = [reason.code, reason.message].filter(Boolean).join(': ');
  const message = `media host answered ${status}${text ? ` ${text}` : ''}`;
  const options = {
    status,
    ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
    ...(reason.code === undefined ? {} : { hostCode: reason.code }),
  };
  if (status === 400 || status === 401 || status === 403) {
    return new MediaError('MEDIA_URL_REFUSED', message, options);
  }
  if (status === 408 || status === 425 || status === 429 || status >= 500) {
    return new MediaError('MEDIA_TRANSIENT', message, options);
  }
  return new MediaError('MEDIA_HTTP_ERROR', message, options);
}

/** Transport failures (resets, timeouts, DNS) are transient; a MediaError stays as it is. */
export function asMediaError(error: unknown): MediaError {
  if (error instanceof MediaError) return error;
  const code = (error as { code?: unknown } | null)?.code;
  if (code === 'MEDIA_ADDRESS_REFUSED') {
    return new MediaError('MEDIA_ADDRESS_REFUSED', (error as Error).message, { cause: error });
  }
  if (typeof code === 'string' && DISK_FULL_CODES.has(code)) {
    return new MediaError(
      'MEDIA_DISK_FULL',
      `no room left for media files: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
  const text = error instanceof Error ? error.message : String(error);
  return new MediaError(
    'MEDIA_TRANSIENT',
    `download failed: ${typeof code === 'string' ? `${code} ` : ''}${text}`,
    { cause: error },
  );
}
