/**
 * Downloads one media file into content-addressed storage (storage.ts): streamed to a partial
 * file while it is hashed (sha256), size-capped and type-checked, then moved into place.
 *
 * Safety: only `http:` and `https:` URLs without credentials; requests carry a fixed
 * `User-Agent` and `Accept` and nothing else (never an Authorization header, never the API
 * key: this client shares nothing with the API client); redirects are followed by hand, at
 * most `maxRedirects`, each hop checked again (scheme here, address in agent.ts); headers and
 * every pause in the body time out.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import type { Readable } from 'node:stream';
import type { Agent } from 'undici';
import { request } from 'undici';
import { discardBody, readBodyStart } from '../api/body.ts';
import { parseRetryAfterMs } from '../api/retry-after.ts';
import { checkDeclaredType, SNIFF_BYTES, verifyType } from './content-type.ts';
import { asMediaError, errorForStatus, MediaError } from './errors.ts';
import type { MediaKind, StoredType } from './kinds.ts';
import type { DownloadSlots, Release } from './slots.ts';
import {
  closePartial,
  fsyncFd,
  openPartialFile,
  type PartialFile,
  placeFile,
  writeAll,
} from './storage.ts';

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

/**
 * Hashes, counts, caps and type-checks the bytes of a body on their way to the partial file.
 * Chunks are held back only until the first SNIFF_BYTES have been checked; each is hashed where
 * it is, never copied.
 */
class Inspector {
  readonly hash = createHash('sha256');
  bytes = 0;
  type: StoredType | undefined;
  #head: Buffer[] = [];
  #headBytes = 0;

  constructor(
    private readonly kind: MediaKind,
    private readonly contentType: string | string[] | undefined,
    private readonly maxBytes: number,
  ) {}

  /** The chunks that may be written now, `chunk` included; throws when the body is refused. */
  take(chunk: Buffer): Buffer[] {
    this.bytes += chunk.length;
    if (this.bytes > this.maxBytes) {
      throw new MediaError(
        'MEDIA_TOO_LARGE',
        `larger than media.maxBytes (${this.maxBytes} bytes)`,
      );
    }
    if (this.type !== undefined) return this.#pass([chunk]);
    this.#head.push(chunk);
    this.#headBytes += chunk.length;
    return this.#headBytes < SNIFF_BYTES ? [] : this.#release();
  }

  /** The chunks still held once the body has ended; throws when its type is refused. */
  end(): Buffer[] {
    return this.type === undefined ? this.#release() : [];
  }

  #release(): Buffer[] {
    // Only the first SNIFF_BYTES are looked at: no copy of the whole first chunk (up to 64 kB)
    // for them, on every download.
    const head = Buffer.concat(this.#head, Math.min(this.#headBytes, SNIFF_BYTES));
    const check = verifyType(this.kind, this.contentType, head);
    if (!check.ok) throw new MediaError(check.code, check.message);
    this.type = check.type;
    const held = this.#head;
    this.#head = [];
    return this.#pass(held);
  }

  #pass(chunks: Buffer[]): Buffer[] {
    for (const chunk of chunks) this.hash.update(chunk);
    return chunks;
  }
}

/**
 * Bodies up to this size are held in memory and written with one call once they have ended; a
 * larger one is written as it comes from then on. Every call through libuv's thread pool costs
 * the event loop a round trip (a pool thread woken, then the loop): a 100 kB file came in two
 * to seven chunks, each its own write. Held per transfer, so at most slots times this.
 */
export const HELD_BYTES_MAX = 1024 * 1024;

/**
 * Streams `body` through `inspector` into a partial file, made by `create` once the body has
 * ended or has outgrown HELD_BYTES_MAX, whichever comes first; a larger body is then written
 * one chunk at a time, the body paused while a write is under way (a slow disk slows the
 * download, nothing piles up). Straight writes to the descriptor: no stream pipeline set up
 * per file. Returns the file, open, not yet fsynced; none is made when the body is refused.
 *
 * The body flows: each chunk is handed over as the HTTP parser produces it. Read through an
 * async iterator instead, every chunk of 64 kB filled the body's buffer, which paused the
 * connection until the next turn of the event loop read it: more wake-ups here, and the media
 * host's writes to a full socket went out in pieces.
 */
function writeBody(
  body: Readable,
  inspector: Inspector,
  create: () => Promise<PartialFile>,
): Promise<PartialFile> {
  return new Promise((resolve, reject) => {
    let held: Buffer[] = [];
    let heldBytes = 0;
    let file: PartialFile | undefined;
    /** The write under way, while the body is paused for it. */
    let writing: Promise<void> | undefined;
    let settled = false;

    const fail = (error: unknown) => {
      if (settled) return;
      settled = true;
      body.off('data', onData);
      body.off('end', onEnd);
      // Once the write under way is over: it may be the one that makes the file.
      void (writing ?? Promise.resolve())
        .catch(() => {})
        .then(() => (file ? dropPartial(file) : undefined))
        .finally(() => reject(error));
    };
    const flush = async (chunks: Buffer[]) => {
      file ??= await create();
      await writeAll(file.fd, chunks);
    };
    const onData = (chunk: Buffer) => {
      let parts: Buffer[];
      try {
        parts = inspector.take(chunk);
      } catch (error) {
        fail(error);
        return;
      }
      held.push(...parts);
      heldBytes += chunk.length;
      if (!file && heldBytes <= HELD_BYTES_MAX) return;
      const chunks = held;
      held = [];
      body.pause();
      writing = flush(chunks).then(() => {
        writing = undefined;
        if (!settled) body.resume();
      });
      writing.catch(fail);
    };
    const onEnd = () => {
      let rest: Buffer[];
      try {
        rest = [...held, ...inspector.end()];
      } catch (error) {
        fail(error);
        return;
      }
      held = [];
      writing = (writing ?? Promise.resolve()).then(() => flush(rest));
      writing.then(() => {
        if (settled) return;
        settled = true;
        resolve(file!);
      }, fail);
    };
    body.on('data', onData);
    body.on('end', onEnd);
    body.on('error', fail);
  });
}

export interface Downloader {
  download(input: DownloadInput): Promise<Downloaded>;
}

export function createDownloader(options: DownloaderOptions): Downloader {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const maxRedirects = options.maxRedirects ?? 5;
  const headers = { 'user-agent': options.userAgent ?? 'harvest-media', accept: '*/*' };

  async function open(input: DownloadInput) {
    let url = checkUrl(input.url);
    for (let hop = 0; ; hop++) {
      const response = await request(url, {
        method: 'GET',
        headers,
        dispatcher: options.agent,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
        signal: input.signal ?? null,
      }).catch((error: unknown) => {
        throw asMediaError(error);
      });
      const { statusCode, body } = response;
      if (statusCode >= 200 && statusCode < 300) return { url, response };
      if (REDIRECTS.has(statusCode)) {
        discardBody(body);
        const location = response.headers.location;
        const target = Array.isArray(location) ? location[0] : location;
        if (!target) {
          throw new MediaError(
            'MEDIA_REDIRECT_REFUSED',
            `redirect ${statusCode} without a Location`,
          );
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
        url = checkUrl(next.href);
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

  /**
   * The part of a download that holds a slot: request (and redirects), checks, and the body
   * hashed, counted and type-checked on its way into a partial file (writeBody). The file is
   * left open, not yet fsynced.
   */
  async function transfer(input: DownloadInput) {
    const { url, response } = await open(input);
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

  return {
    async download(input) {
      const release: Release = options.slots
        ? await options.slots.acquire(input.deadlineAt)
        : () => {};
      let transferred: Awaited<ReturnType<typeof transfer>>;
      try {
        transferred = await transfer(input);
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

/** Closes and removes a partial file that will not be placed. */
async function dropPartial(file: PartialFile): Promise<void> {
  try {
    closePartial(file);
  } catch {
    // Closed or not, the file goes.
  }
  await fs.promises.rm(file.path, { force: true });
}
