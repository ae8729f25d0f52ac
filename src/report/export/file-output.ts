/**
 * `--out FILE` of an export or a cost report, by what is at FILE:
 * - nothing, or a regular file: a hidden partial file beside it, renamed into place once
 *   complete, so a failed or interrupted export leaves no partial file and an older file stays
 *   as it was until then (partials.ts: those of exports killed outright are removed later);
 * - a symbolic link: followed to the file it names, which is written as above; the link stays;
 * - a character device or a FIFO: written in place, as the bytes come (`/dev/null`, a named
 *   pipe's reader); a socket: connected to, and written as a stream.
 * Renaming over a device, a FIFO or a socket would replace it with a plain file (as root,
 * /dev/null itself), and over a link, the link.
 */
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { HarvestError } from '../../errors.ts';
import { lstatIfExists, statIfExists } from '../../files.ts';
import {
  descriptorOutput,
  type ExportOutput,
  FileBuffer,
  pieces,
  streamOutput,
  writeFailed,
} from './output.ts';
import { partialPath, removeStalePartials } from './partials.ts';
import { systemErrorText } from './system-error.ts';

/** FILE cannot be opened for writing (`at`: the path opened, beside it): bad input, exit 2. */
function cannotWrite(file: string, error: unknown, at = file): HarvestError {
  const reason = (error as NodeJS.ErrnoException).code ?? '';
  const text: Record<string, string> = {
    ENOENT: 'its folder does not exist',
    EACCES: 'permission denied',
    EROFS: 'read-only file system',
    EISDIR: 'it is a folder',
    ENOTDIR: 'a part of its path is not a folder',
  };
  // A folder that is there but makes no file (/proc): not "does not exist".
  const folder = path.dirname(path.resolve(at));
  const why =
    reason === 'ENOENT' && fs.existsSync(folder)
      ? `${folder} does not take new files (ENOENT)`
      : (text[reason] ?? systemErrorText(error));
  return new HarvestError('OUTPUT_UNWRITABLE', `cannot write ${file}: ${why}`, {
    exitCode: 2,
    cause: error,
  });
}

function errno(code: string): NodeJS.ErrnoException {
  return Object.assign(new Error(code), { code });
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
  const at = statIfExists(target);
  for (const kept of keep) {
    const other = statIfExists(kept);
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

/** Symbolic links followed before giving up, as Linux does (ELOOP). */
const MAX_LINKS = 40;

/** The path `file` ends at once its symbolic links are followed (the file may not exist). */
function followLinks(file: string): string {
  let at = path.resolve(file);
  for (let links = 0; links <= MAX_LINKS; links++) {
    if (!lstatIfExists(at)?.isSymbolicLink()) return at;
    at = path.resolve(fs.realpathSync(path.dirname(at)), fs.readlinkSync(at));
  }
  throw errno('ELOOP');
}

/**
 * Opens the output for `file` now, so an unwritable path fails before any work (a FIFO waits
 * here for its reader). `keep`: files the output must never replace (`databaseFiles`).
 */
export async function openFileOutput(
  file: string,
  keep: readonly string[] = [],
): Promise<ExportOutput> {
  let stat: fs.Stats | undefined;
  let target: string;
  try {
    // What the path ends at, as the system follows it: /dev/stdout's links end at a pipe that
    // has no path of its own.
    stat = statIfExists(file);
    target = stat === undefined || stat.isFile() ? followLinks(file) : path.resolve(file);
  } catch (error) {
    throw cannotWrite(file, error);
  }
  if (stat?.isDirectory()) throw cannotWrite(file, errno('EISDIR'));
  refuseKept(file, target, keep);
  if (stat === undefined || stat.isFile()) return openReplacing(file, target);
  if (stat.isSocket()) return openSocket(file, target);
  return openInPlace(file, target);
}

/** A device or a FIFO, written as it is; opened off the main thread, as a FIFO's open waits. */
async function openInPlace(file: string, target: string): Promise<ExportOutput> {
  let fd: number;
  try {
    fd = await promisify(fs.open)(target, fs.constants.O_WRONLY);
  } catch (error) {
    throw cannotWrite(file, error, target);
  }
  return descriptorOutput(fd, file, true);
}

/** A socket (a listener's path): connected to, written as a stream, ended at the end. */
async function openSocket(file: string, target: string): Promise<ExportOutput> {
  const socket = net.createConnection({ path: target });
  // Failures are read from the output's listener; one after the end must not end the process.
  socket.on('error', () => undefined);
  try {
    await new Promise((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
  } catch (error) {
    socket.destroy();
    throw cannotWrite(file, error);
  }
  const output = streamOutput(socket, file);
  return {
    get gone() {
      return output.gone;
    },
    copies: false,
    write: (chunk) => output.write(chunk),
    async commit() {
      try {
        await output.write('');
        await new Promise<void>((resolve) => socket.end(resolve));
        await output.commit();
      } finally {
        socket.destroy();
      }
    },
    abort() {
      output.abort();
      socket.destroy();
    },
  };
}

/** A new file or a regular one: written beside it under a hidden name, renamed when complete. */
function openReplacing(file: string, target: string): ExportOutput {
  const temp = partialPath(target);
  let fd: number;
  try {
    fd = fs.openSync(temp, 'wx');
  } catch (error) {
    throw cannotWrite(file, error, temp);
  }
  // Its folder takes files: those of exports killed outright are removed now.
  removeStalePartials(path.dirname(target));
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
        throw writeFailed(file, error);
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
        throw writeFailed(file, error);
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
