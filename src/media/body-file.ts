/**
 * A download's body on its way to disk: hashed (sha256), counted, size-capped and type-checked
 * as it streams, and written to a partial file (storage.ts) that the downloader then places.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import type { Readable } from 'node:stream';
import { SNIFF_BYTES, verifyType } from './content-type.ts';
import { MediaError } from './errors.ts';
import type { MediaKind, StoredType } from './kinds.ts';
import { closePartial, type PartialFile, writeAll } from './storage.ts';

/**
 * Hashes, counts, caps and type-checks the bytes of a body on their way to the partial file.
 * Chunks are held back only until the first SNIFF_BYTES have been checked; each is hashed where
 * it is, never copied.
 */
export class Inspector {
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
 * larger one is written as it comes from then on. Each write is a round trip through libuv's
 * thread pool, and a small file arrives in several chunks: one write per file, not per chunk.
 * Held per transfer, so at most slots times this.
 */
export const HELD_BYTES_MAX = 1024 * 1024;

/**
 * Streams `body` through `inspector` into a partial file, made by `create` once the body has
 * ended or has outgrown HELD_BYTES_MAX, whichever comes first; a larger body is then written
 * one chunk at a time, the body paused while a write is under way (a slow disk slows the
 * download, nothing piles up). Straight writes to the descriptor: no stream pipeline set up
 * per file. Returns the file, open, not yet fsynced; none is made when the body is refused.
 *
 * The body flows ('data' events, not an async iterator): each chunk is taken as the HTTP parser
 * produces it, so the body's buffer never fills and pauses the connection until the event loop
 * comes back to it (more wake-ups per file, and the host's writes to the socket split up).
 */
export function writeBody(
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

/** Closes and removes a partial file that will not be placed. */
export async function dropPartial(file: PartialFile): Promise<void> {
  try {
    closePartial(file);
  } catch {
    // Closed or not, the file goes.
  }
  await fs.promises.rm(file.path, { force: true });
}
