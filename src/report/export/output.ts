/**
 * Where an export goes: a file, written under a temporary name beside it and renamed into place
 * only once complete (so a failed or interrupted export leaves no partial file), or stdout,
 * with backpressure, stopping quietly when the reader goes away (`harvest export | head`).
 */
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import type { Writable } from 'node:stream';
import { HarvestError } from '../../errors.ts';
import type { Chunk } from './encoder.ts';

export interface ExportOutput {
  /** Writes a chunk; resolves at once unless the destination asks to wait. */
  write(chunk: Chunk): Promise<void>;
  /** True once the reader of stdout went away: stop writing, it is not an error. */
  readonly gone: boolean;
  /**
   * True when the last `write` was done with the bytes it was given once it resolved (written,
   * or copied), so the caller may fill them again. A file's writes always are. A stream that
   * writes to a file descriptor (stdout, a file stream) counts a piece as pending until the
   * operating system has taken it: when none is pending, every piece given so far is out of
   * its hands. Any other stream may keep the bytes it was given (a PassThrough hands them on
   * as they are), so it never gets them back.
   */
  readonly copies: boolean;
  /** Completes the output (renames the file into place). */
  commit(): Promise<void>;
  /** Removes what was written (the temporary file); idempotent. */
  abort(): void;
}

function pieces(chunk: Chunk): (string | Uint8Array)[] {
  if (typeof chunk === 'string') return chunk.length > 0 ? [chunk] : [];
  if (chunk instanceof Uint8Array) return chunk.byteLength > 0 ? [chunk] : [];
  return [...chunk];
}

function cannotWrite(file: string, error: unknown): HarvestError {
  const reason = (error as NodeJS.ErrnoException).code ?? String(error);
  const text: Record<string, string> = {
    ENOENT: 'its folder does not exist',
    EACCES: 'permission denied',
    EROFS: 'read-only file system',
    EISDIR: 'it is a folder',
    ENOTDIR: 'a part of its path is not a folder',
  };
  return new HarvestError('OUTPUT_UNWRITABLE', `cannot write ${file}: ${text[reason] ?? reason}`, {
    exitCode: 2,
    cause: error,
  });
}

/** Bytes gathered before a write to the file: few system calls, one buffer for the whole export. */
export const FILE_BUFFER_BYTES = 1024 * 1024;

/**
 * Text and bytes gathered into one buffer, reused from write to write, and written out when it
 * is full: a write of a batch's text then costs no allocation of its own (which, for buffers of
 * a few hundred KB, is a fresh mapping and its page faults each time) and no system call.
 */
class FileBuffer {
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
      if (typeof piece === 'string') fs.writeSync(this.fd, piece);
      else fs.writeSync(this.fd, piece, 0, piece.byteLength);
    } else if (typeof piece === 'string') {
      this.#size += this.#bytes.write(piece, this.#size);
    } else {
      this.#bytes.set(piece, this.#size);
      this.#size += piece.byteLength;
    }
  }

  flush(): void {
    let at = 0;
    while (at < this.#size) at += fs.writeSync(this.fd, this.#bytes, at, this.#size - at);
    this.#size = 0;
  }
}

/** The database at `dbPath` and the files SQLite keeps beside it (its WAL, shared memory, journal). */
export function databaseFiles(dbPath: string): string[] {
  return ['', '-wal', '-shm', '-journal'].map((suffix) => `${dbPath}${suffix}`);
}

/** `file` with its folder's symbolic links resolved (the folder may not exist: then as given). */
function canonical(file: string): string {
  const resolved = path.resolve(file);
  try {
    return path.join(fs.realpathSync(path.dirname(resolved)), path.basename(resolved));
  } catch {
    return resolved;
  }
}

/**
 * Refuses a target that is one of `keep` (the database and its companions): written over, the
 * database is gone, with every record it held. Compared by path and, for files that exist, as
 * the same file (a hard link, a symbolic link).
 */
function refuseKept(file: string, target: string, keep: readonly string[]): void {
  const at = fs.statSync(target, { throwIfNoEntry: false });
  for (const kept of keep) {
    const other = fs.statSync(kept, { throwIfNoEntry: false });
    const same =
      canonical(kept) === canonical(target) ||
      (at !== undefined && other !== undefined && at.dev === other.dev && at.ino === other.ino);
    if (same) {
      throw new HarvestError(
        'OUTPUT_IS_DATABASE',
        `cannot write ${file}: it is harvest's database (${kept}); choose another file`,
        { exitCode: 2 },
      );
    }
  }
}

/**
 * Opens the temporary file beside `file` now, so an unwritable path fails before any work.
 * `keep`: files the output must never replace (the database: `databaseFiles`).
 */
export function openFileOutput(file: string, keep: readonly string[] = []): ExportOutput {
  const target = path.resolve(file);
  if (fs.existsSync(target) && fs.statSync(target).isDirectory()) {
    throw cannotWrite(file, Object.assign(new Error('EISDIR'), { code: 'EISDIR' }));
  }
  refuseKept(file, target, keep);
  const temp = path.join(
    path.dirname(target),
    `.${path.basename(target)}.${process.pid}-${randomBytes(4).toString('hex')}.partial`,
  );
  let fd: number;
  try {
    fd = fs.openSync(temp, 'wx');
  } catch (error) {
    throw cannotWrite(file, error);
  }
  let open = true;
  const removeNow = () => {
    if (open) fs.closeSync(fd);
    open = false;
    fs.rmSync(temp, { force: true });
  };
  // Interrupted (Ctrl-C, kill): remove the temporary file, then die of the signal as usual.
  const onSignal = (signal: NodeJS.Signals) => {
    removeNow();
    process.kill(process.pid, signal);
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const forget = () => {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  };
  const buffer = new FileBuffer(fd);
  return {
    gone: false,
    copies: true,
    async write(chunk) {
      try {
        for (const piece of pieces(chunk)) buffer.add(piece);
      } catch (error) {
        throw cannotWrite(file, error);
      }
    },
    async commit() {
      try {
        buffer.flush();
        fs.fsyncSync(fd);
        fs.closeSync(fd);
        open = false;
        fs.renameSync(temp, target);
      } catch (error) {
        removeNow();
        throw cannotWrite(file, error);
      } finally {
        forget();
      }
    },
    abort() {
      removeNow();
      forget();
    },
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

/** Writes to a stream (stdout); a closed pipe (EPIPE) ends the export quietly. */
export function streamOutput(stream: NodeJS.WritableStream): ExportOutput {
  let gone = false;
  let failure: Error | undefined;
  const onError = (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') gone = true;
    else failure = error;
  };
  stream.on('error', onError);
  const toDescriptor = typeof (stream as { fd?: unknown }).fd === 'number';
  const check = () => {
    if (failure)
      throw new HarvestError('OUTPUT_FAILED', `cannot write the export: ${failure.message}`);
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
