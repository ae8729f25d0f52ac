/**
 * Where an export goes, once open: a file descriptor written from a buffer of our own (a file,
 * a device, a FIFO, stdout on a file or a device), or a stream (stdout on a pipe or a terminal,
 * a socket), with backpressure. A reader that goes away (EPIPE: `harvest export | head`) ends
 * the export quietly; any other failed write (a full disk, an I/O error) is an error, exit 3.
 * `--out FILE` chooses among them by what is at FILE (file-output.ts).
 */
import { once } from 'node:events';
import fs from 'node:fs';
import type { Writable } from 'node:stream';
import tty from 'node:tty';
import { HarvestError } from '../../errors.ts';
import type { Chunk } from './encoder.ts';
import { systemErrorText } from './system-error.ts';

export interface ExportOutput {
  /** Writes a chunk; resolves at once unless the destination asks to wait. */
  write(chunk: Chunk): Promise<void>;
  /** True once the reader (of stdout, a FIFO, a socket) went away: stop writing, it is not an error. */
  readonly gone: boolean;
  /**
   * True when the last `write` was done with the bytes it was given once it resolved (written,
   * or copied), so the caller may fill them again. A file descriptor's writes always are. A
   * stream that writes to a file descriptor (stdout, a file stream) counts a piece as pending
   * until the operating system has taken it: when none is pending, every piece given so far is
   * out of its hands. Any other stream may keep the bytes it was given (a PassThrough hands
   * them on as they are), so it never gets them back.
   */
  readonly copies: boolean;
  /** Completes the output (writes what is buffered; renames a file into place). */
  commit(): Promise<void>;
  /** Stops: removes what was written where it can (a file's partial file); idempotent. */
  abort(): void;
}

export function pieces(chunk: Chunk): (string | Uint8Array)[] {
  if (typeof chunk === 'string') return chunk.length > 0 ? [chunk] : [];
  if (chunk instanceof Uint8Array) return chunk.byteLength > 0 ? [chunk] : [];
  return [...chunk];
}

/** `what` (a file, `stdout`) failed while written to: the environment's doing, exit 3. */
export function writeFailed(what: string, error: unknown): HarvestError {
  const target = what === 'stdout' ? 'to stdout' : what;
  return new HarvestError('OUTPUT_FAILED', `cannot write ${target}: ${systemErrorText(error)}`, {
    exitCode: 3,
    cause: error,
  });
}

function isClosedPipe(error: unknown): boolean {
  return (error as NodeJS.ErrnoException).code === 'EPIPE';
}

/** Bytes gathered before a write to the file: few system calls, one buffer for the whole export. */
export const FILE_BUFFER_BYTES = 1024 * 1024;

/** Writes all of `bytes`: a write may take fewer (a disk filling up), and the next one says why. */
function writeAll(fd: number, bytes: Uint8Array, from = 0): void {
  for (let at = from; at < bytes.byteLength; ) {
    at += fs.writeSync(fd, bytes, at, bytes.byteLength - at);
  }
}

/**
 * Text and bytes gathered into one buffer, reused from write to write, and written out when it
 * is full: a write of a batch's text then costs no allocation of its own (which, for buffers of
 * a few hundred KB, is a fresh mapping and its page faults each time) and no system call.
 */
export class FileBuffer {
  readonly #bytes = Buffer.allocUnsafe(FILE_BUFFER_BYTES);
  #size = 0;

  constructor(private readonly fd: number) {}

  add(piece: string | Uint8Array): void {
    // UTF-8 takes at most 3 bytes per UTF-16 code unit.
    const most = typeof piece === 'string' ? piece.length * 3 : piece.byteLength;
    // Bytes longer than half the buffer are written as they are, not copied first.
    const direct = most > (typeof piece === 'string' ? this.#bytes.length : this.#bytes.length / 2);
    if (direct || this.#size + most > this.#bytes.length) this.flush();
    if (direct) {
      if (typeof piece !== 'string') writeAll(this.fd, piece);
      else {
        const written = fs.writeSync(this.fd, piece);
        // Rare (text of over a million characters, a disk filling up): the rest as bytes.
        if (written < Buffer.byteLength(piece)) writeAll(this.fd, Buffer.from(piece), written);
      }
    } else if (typeof piece === 'string') {
      this.#size += this.#bytes.write(piece, this.#size);
    } else {
      this.#bytes.set(piece, this.#size);
      this.#size += piece.byteLength;
    }
  }

  flush(): void {
    const size = this.#size;
    this.#size = 0;
    writeAll(this.fd, this.#bytes.subarray(0, size));
  }
}

/**
 * Writes to a file descriptor through a `FileBuffer`. `what` names it in errors; `owned`: the
 * descriptor is closed at the end (not stdout's).
 */
export function descriptorOutput(fd: number, what: string, owned: boolean): ExportOutput {
  const buffer = new FileBuffer(fd);
  let gone = false;
  let open = owned;
  const close = () => {
    if (!open) return;
    open = false;
    try {
      fs.closeSync(fd);
    } catch {
      // nothing more to write through it
    }
  };
  const attempt = (step: () => void) => {
    if (gone) return;
    try {
      step();
    } catch (error) {
      if (!isClosedPipe(error)) throw writeFailed(what, error);
      gone = true;
    }
  };
  return {
    get gone() {
      return gone;
    },
    copies: true,
    async write(chunk) {
      attempt(() => {
        for (const piece of pieces(chunk)) buffer.add(piece);
      });
    },
    async commit() {
      try {
        attempt(() => buffer.flush());
      } finally {
        close();
      }
    },
    abort: close,
  };
}

/** Resolves when the stream drains or fails (the failure itself is seen by its listener). */
async function drained(stream: NodeJS.WritableStream): Promise<void> {
  const stop = new AbortController();
  try {
    await Promise.race([
      once(stream, 'drain', { signal: stop.signal }),
      once(stream, 'error', { signal: stop.signal }),
    ]);
  } catch {
    // an error: the stream's own listener recorded it
  } finally {
    stop.abort();
  }
}

/** Writes to a stream; a closed pipe (EPIPE) ends the export quietly. `what` names it in errors. */
export function streamOutput(stream: NodeJS.WritableStream, what = 'stdout'): ExportOutput {
  let gone = false;
  let failure: Error | undefined;
  const onError = (error: NodeJS.ErrnoException) => {
    if (isClosedPipe(error)) gone = true;
    else failure ??= error;
  };
  stream.on('error', onError);
  const toDescriptor = typeof (stream as { fd?: unknown }).fd === 'number';
  const check = () => {
    if (failure) throw writeFailed(what, failure);
  };
  return {
    get gone() {
      return gone;
    },
    get copies() {
      // Nothing buffered: every piece given so far has gone to the operating system.
      return toDescriptor && (stream as Partial<Writable>).writableLength === 0;
    },
    async write(chunk) {
      for (const piece of pieces(chunk)) {
        if (gone) return;
        check();
        if (!stream.write(piece)) await drained(stream);
      }
      check();
    },
    async commit() {
      check();
      stream.off('error', onError);
    },
    abort() {
      stream.off('error', onError);
    },
  };
}

/** True when `fd` takes blocking writes that report each failure: a file, a device (not a terminal). */
function writesInPlace(fd: number): boolean {
  try {
    const stat = fs.fstatSync(fd);
    return stat.isFile() || (stat.isCharacterDevice() && !tty.isatty(fd));
  } catch {
    return false;
  }
}

/**
 * The output for `stdout`. On a file or a device, process.stdout's writes drop what a write did
 * not take (a disk filling up loses the end of the export without a word): its descriptor is
 * written from our own buffer then, every byte or an error. A pipe, a socket or a terminal
 * keeps the stream.
 */
export function stdoutOutput(stream: NodeJS.WritableStream): ExportOutput {
  if (stream === process.stdout && writesInPlace(process.stdout.fd)) {
    return descriptorOutput(process.stdout.fd, 'stdout', false);
  }
  return streamOutput(stream);
}
