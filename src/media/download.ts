/**
 * Downloads one media file into content-addressed storage (storage.ts): streamed to a partial
 * file while it is hashed (sha256), size-capped and type-checked, then moved into place.
 *
 * Safety: only `http:` and `https:` URLs without credentials; requests carry a fixed
 * `User-Agent` and `Accept` and nothing else (never an Authorization header, never the API
 * key: this client shares nothing with the API client); redirects are followed by hand, at
 * most `maxRedirects`, each hop checked again (scheme here, address in agent.ts); headers and
 * every pause in the body time out.
 *
 * Every transfer has a deadline: it ends by the earlier of its URL's end (`transferEnd`: the
 * deadline, or the expiry once that has passed) and `maxTransferMs` after it got its slot, so a
 * host that trickles bytes frees the slot; and it ends at once when the downloader's `signal`
 * aborts (its worker stops).
 */
import type { Agent } from 'undici';
import { request } from 'undici';
import { discardBody, readBodyStart } from '../api/body.ts';
import { parseRetryAfterMs } from '../api/retry-after.ts';
import { dropPartial, Inspector, writeBody } from './body-file.ts';
import { checkDeclaredType } from './content-type.ts';
import { asMediaError, errorForStatus, MediaError } from './errors.ts';
import type { MediaKind } from './kinds.ts';
import type { DownloadSlots, Release } from './slots.ts';
import { closePartial, fsyncFd, openPartialFile, type PartialFile, placeFile } from './storage.ts';

/** Tests size their bodies against it. */
export { HELD_BYTES_MAX } from './body-file.ts';

export interface DownloaderOptions {
  /** The guarded agent (agent.ts) every request goes through. */
  agent: Agent;
  /** Longest wait for response headers, and for each pause in the body, in ms. Default 30000. */
  timeoutMs?: number;
  /** Redirects followed per download. Default 5. */
  maxRedirects?: number;
  /** `User-Agent` header. Default `harvest-media`. */
  userAgent?: string;
  /**
   * Transfers in flight at once (slots.ts): a download holds a slot from its first request to
   * its last byte written, not while its file is made durable. Default: no bound here.
   */
  slots?: DownloadSlots;
  /** Longest one transfer takes, from getting its slot to its last byte, in ms. Default 600000. */
  maxTransferMs?: number;
  /** Ends every transfer under way, and any later one at once (the worker stops). */
  signal?: AbortSignal;
}

export interface DownloadInput {
  url: string;
  kind: MediaKind;
  /** Largest file accepted, in bytes. */
  maxBytes: number;
  /** The data directory; stored paths are relative to it. */
  dataDir: string;
  /** The media folder (storage.ts `mediaRoot`). */
  root: string;
  /** Who downloads (a worker id): names the partial file, so a dead worker's can be found. */
  owner: string;
  /** When the download must have started, ms since the epoch: the earliest gets a slot first. */
  deadlineAt?: number;
  /** When the URL stops working, ms since the epoch (`transferEnd`). Default unknown. */
  expiresAt?: number;
  signal?: AbortSignal;
}

export interface Downloaded {
  sha256: string;
  bytes: number;
  contentType: string;
  /** Relative to the data directory. */
  relPath: string;
  /** True when the same bytes were stored already. */
  existed: boolean;
  /** The URL the bytes came from, after redirects. */
  finalUrl: string;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
/** Most of an error body read for the host's reason, in bytes. */
const ERROR_BODY_MAX = 16 * 1024;

/** Refuses anything but a plain http(s) URL. */
export function checkUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new MediaError('MEDIA_URL_INVALID', `not a URL: ${raw.slice(0, 200)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new MediaError(
      'MEDIA_URL_INVALID',
      `only http and https media URLs are fetched, not ${url.protocol}`,
    );
  }
  if (url.username || url.password) {
    throw new MediaError('MEDIA_URL_INVALID', 'media URLs with credentials are not fetched');
  }
  return url;
}

/** What every request of one downloader shares. */
interface Fetcher {
  agent: Agent;
  headers: Record<string, string>;
  timeoutMs: number;
  maxRedirects: number;
  /** Ends this transfer: its deadline, the caller's signal, the downloader's. */
  signal: AbortSignal;
}

type Response = Awaited<ReturnType<typeof request>>;

/** The first 2xx answer for `input.url`, following at most `maxRedirects` redirects. */
async function open(fetcher: Fetcher, input: DownloadInput) {
  let url = checkUrl(input.url);
  for (let hop = 0; ; hop++) {
    const response = await request(url, {
      method: 'GET',
      headers: fetcher.headers,
      dispatcher: fetcher.agent,
      headersTimeout: fetcher.timeoutMs,
      bodyTimeout: fetcher.timeoutMs,
      signal: fetcher.signal,
    }).catch((error: unknown) => {
      throw asMediaError(error);
    });
    const { statusCode, body } = response;
    if (statusCode >= 200 && statusCode < 300) return { url, response };
    if (REDIRECTS.has(statusCode)) {
      discardBody(body);
      url = redirectTarget(response, url, hop, fetcher.maxRedirects);
      continue;
    }
    const text = await readBodyStart(body, ERROR_BODY_MAX);
    const retryAfterMs = parseRetryAfterMs({
      header: response.headers['retry-after'],
      nowMs: Date.now(),
    });
    throw errorForStatus(statusCode, text, retryAfterMs);
  }
}

/** Where a redirect leads, checked like the first URL; refused past `maxRedirects`. */
function redirectTarget(response: Response, url: URL, hop: number, maxRedirects: number): URL {
  const { statusCode } = response;
  const location = response.headers.location;
  const target = Array.isArray(location) ? location[0] : location;
  if (!target) {
    throw new MediaError('MEDIA_REDIRECT_REFUSED', `redirect ${statusCode} without a Location`);
  }
  if (hop >= maxRedirects) {
    throw new MediaError('MEDIA_REDIRECT_REFUSED', `more than ${maxRedirects} redirects`);
  }
  let next: URL;
  try {
    next = new URL(target, url);
  } catch {
    throw new MediaError(
      'MEDIA_REDIRECT_REFUSED',
      `redirect ${statusCode} to a Location that is not a URL: ${target.slice(0, 200)}`,
    );
  }
  return checkUrl(next.href);
}

/**
 * The part of a download that holds a slot: request (and redirects), checks, and the body
 * hashed, counted and type-checked on its way into a partial file (writeBody). The file is
 * left open, not yet fsynced.
 */
async function transfer(fetcher: Fetcher, input: DownloadInput) {
  const { url, response } = await open(fetcher, input);
  const declared = response.headers['content-type'];
  const early = checkDeclaredType(input.kind, declared);
  const length = Number(response.headers['content-length']);
  const refusal = early
    ? new MediaError(early.code, early.message)
    : length > input.maxBytes
      ? new MediaError(
          'MEDIA_TOO_LARGE',
          `Content-Length ${length} is over media.maxBytes (${input.maxBytes})`,
        )
      : undefined;
  if (refusal) {
    discardBody(response.body);
    throw refusal;
  }
  const inspector = new Inspector(input.kind, declared, input.maxBytes);
  let file: PartialFile;
  try {
    file = await writeBody(response.body, inspector, () =>
      openPartialFile(input.root, input.owner),
    );
  } catch (error) {
    discardBody(response.body);
    throw asMediaError(error);
  }
  return { url, file, inspector };
}

export interface Downloader {
  download(input: DownloadInput): Promise<Downloaded>;
}

/** Default of `maxTransferMs`. */
const MAX_TRANSFER_MS = 600_000;

/**
 * When a transfer of a URL that starts at `nowMs` must have ended: the URL's deadline (its
 * expiry less the margin) while that is ahead, else its expiry (an old URL tried while it
 * lasts); undefined when neither is known. Pure.
 */
export function transferEnd(
  url: { deadlineAt?: number | undefined; expiresAt?: number | undefined },
  nowMs: number,
): number | undefined {
  return url.deadlineAt !== undefined && nowMs < url.deadlineAt ? url.deadlineAt : url.expiresAt;
}

/**
 * Runs `transfer` under its deadline: the earlier of its URL's end and `maxTransferMs` from
 * now (the slot is in hand). A transfer cut off by it fails transient (retried, or re-issued, by the usual rules); one
 * cut off by the downloader's signal fails MEDIA_INTERRUPTED.
 */
async function transferByDeadline(
  base: Omit<Fetcher, 'signal'>,
  input: DownloadInput,
  maxTransferMs: number,
  stop: AbortSignal | undefined,
): Promise<Awaited<ReturnType<typeof transfer>>> {
  const startedAt = Date.now();
  const urlEnd = transferEnd(input, startedAt) ?? Number.POSITIVE_INFINITY;
  const endBy = Math.min(urlEnd, startedAt + maxTransferMs);
  // One controller per transfer, told by listeners (not AbortSignal.any, which would tie every
  // transfer to the long-lived `stop` signal until it is collected).
  const ends = new AbortController();
  let cause: 'deadline' | 'stop' | 'caller' | undefined;
  const end = (why: NonNullable<typeof cause>) => () => {
    cause ??= why;
    ends.abort();
  };
  const timer = setTimeout(end('deadline'), Math.max(0, endBy - startedAt));
  const onStop = end('stop');
  const onCaller = end('caller');
  if (stop?.aborted) onStop();
  if (input.signal?.aborted) onCaller();
  stop?.addEventListener('abort', onStop);
  input.signal?.addEventListener('abort', onCaller);
  try {
    return await transfer({ ...base, signal: ends.signal }, input);
  } catch (error) {
    if (cause === 'stop') {
      throw new MediaError('MEDIA_INTERRUPTED', 'download stopped: its worker is stopping', {
        cause: error,
      });
    }
    if (cause === 'deadline') {
      const limit =
        endBy === startedAt + maxTransferMs
          ? `the longest transfer (${maxTransferMs} ms, HARVEST_MEDIA_MAX_TRANSFER_MS)`
          : "its URL's deadline";
      throw new MediaError(
        'MEDIA_TRANSIENT',
        `download not finished after ${Date.now() - startedAt} ms: cut off at ${limit}`,
        { cause: error },
      );
    }
    throw error;
  } finally {
    clearTimeout(timer);
    stop?.removeEventListener('abort', onStop);
    input.signal?.removeEventListener('abort', onCaller);
  }
}

export function createDownloader(options: DownloaderOptions): Downloader {
  const base = {
    agent: options.agent,
    headers: { 'user-agent': options.userAgent ?? 'harvest-media', accept: '*/*' },
    timeoutMs: options.timeoutMs ?? 30_000,
    maxRedirects: options.maxRedirects ?? 5,
  };
  const maxTransferMs = options.maxTransferMs ?? MAX_TRANSFER_MS;
  return {
    async download(input) {
      if (options.signal?.aborted) {
        throw new MediaError('MEDIA_INTERRUPTED', 'download not started: its worker is stopping');
      }
      const release: Release = options.slots
        ? await options.slots.acquire(input.deadlineAt)
        : () => {};
      let transferred: Awaited<ReturnType<typeof transfer>>;
      try {
        transferred = await transferByDeadline(base, input, maxTransferMs, options.signal);
      } finally {
        release();
      }
      const { url, file, inspector } = transferred;
      try {
        // The bytes are on disk before the file is renamed into place.
        await fsyncFd(file.fd);
        closePartial(file);
      } catch (error) {
        await dropPartial(file);
        throw asMediaError(error);
      }
      const sha256 = inspector.hash.digest('hex');
      const type = inspector.type!;
      let placed: Awaited<ReturnType<typeof placeFile>>;
      try {
        placed = await placeFile({
          dataDir: input.dataDir,
          root: input.root,
          partial: file.path,
          sha256,
          ext: type.ext,
          bytes: inspector.bytes,
        });
      } catch (error) {
        // Not moved into place: the partial file goes now, not when its worker is gone.
        await dropPartial(file);
        throw asMediaError(error);
      }
      return {
        sha256,
        bytes: inspector.bytes,
        contentType: type.contentType,
        relPath: placed.relPath,
        existed: placed.existed,
        finalUrl: url.href,
      };
    },
  };
}
