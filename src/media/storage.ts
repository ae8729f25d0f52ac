/**
 * Content-addressed files under the data directory: `<dir>/ab/abcdef….<ext>`, named by the
 * sha256 of their bytes, so the same bytes are stored once however many results point at them.
 *
 * A download is written to `<dir>/.partial/<worker id>--<random>.part`; only a complete, hashed
 * and fsynced file is renamed into place (an atomic step on one filesystem), and the directory
 * entry is fsynced. A crash mid-download leaves a `.part` file, which nothing counts as saved and
 * which a media role removes (when it starts, and every minute) once its worker is known to be
 * dead. File names never come from the URL.
 */
import { createHash, randomUUID } from 'node:crypto';
import fsSync, { createReadStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { HarvestError } from '../errors.ts';
import { statIfExists } from '../files.ts';

export const PARTIAL_DIR = '.partial';

/**
 * The absolute media directory for `dir` (relative to the data directory). Refuses absolute
 * paths and paths that climb out of the data directory.
 */
export function mediaRoot(dataDir: string, dir: string): string {
  const root = path.resolve(dataDir);
  const target = path.resolve(root, dir);
  const rel = path.relative(root, target);
  if (path.isAbsolute(dir) || rel === '' || rel.startsWith('..') || path.isAbsolute(rel)) {
    throw new HarvestError(
      'MEDIA_DIR_INVALID',
      `media.dir must be a folder inside the data directory, got "${dir}"`,
      { exitCode: 2 },
    );
  }
  return target;
}

const SHA256_HEX = /^[0-9a-f]{64}$/;
const EXTENSION = /^[a-z0-9]{1,8}$/;

/** `ab/abcdef….png` for a sha256 (hex) and an extension. */
export function contentPath(sha256: string, ext: string): string {
  if (!SHA256_HEX.test(sha256) || !EXTENSION.test(ext)) {
    throw new Error(`not a content address: ${sha256}.${ext}`);
  }
  return `${sha256.slice(0, 2)}/${sha256}.${ext}`;
}

/** Whether `folder/name` is a path `contentPath` makes (a stored file, not a partial one). */
export function isContentPath(folder: string, name: string): boolean {
  const dot = name.indexOf('.');
  const sha256 = name.slice(0, dot);
  return (
    dot > 0 &&
    SHA256_HEX.test(sha256) &&
    EXTENSION.test(name.slice(dot + 1)) &&
    folder === sha256.slice(0, 2)
  );
}

/** Separates the owner (a worker id) from the random part of a partial file's name. */
const OWNER_SEPARATOR = '--';

/** Content folders (`ab/`) this process made or found already: a download need not ask again. */
const madeDirs = new Set<string>();

async function ensureDir(dir: string): Promise<void> {
  if (madeDirs.has(dir)) return;
  await fs.mkdir(dir, { recursive: true });
  madeDirs.add(dir);
}

/**
 * Runs `step` in `dir`; when it fails because the folder is gone (removed by hand, say), makes
 * it again and runs the step once more.
 */
async function inDir<T>(dir: string, step: () => Promise<T>): Promise<T> {
  await ensureDir(dir);
  try {
    return await step();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    madeDirs.delete(dir);
    await ensureDir(dir);
    return step();
  }
}

/*
 * Calls that change the file system (create, write, rename, remove, fsync) go through libuv's
 * thread pool: on a journalling file system they can wait for a journal commit, which takes
 * milliseconds while downloads fsync all the time. Calls that only look (stat, opening a folder
 * to fsync it) or let go (close) are made here, synchronously: a few microseconds each, where a
 * round trip through the pool costs the event loop tens (a pool thread woken, then the loop),
 * for every file. Descriptors are plain numbers, not FileHandles, for the same reason.
 */
const openFd = promisify(fsSync.open);
const renameFile = promisify(fsSync.rename);
export const fsyncFd = promisify(fsSync.fsync);

const writev = promisify(fsSync.writev);

/** Writes `chunks` in order, all of them: one call unless the system writes part of them. */
export async function writeAll(fd: number, chunks: Buffer[]): Promise<void> {
  let rest = chunks.filter((c) => c.length > 0);
  while (rest.length > 0) {
    let { bytesWritten: written } = await writev(fd, rest);
    if (written === 0) throw new Error('the file system took none of the bytes written');
    const next: Buffer[] = [];
    for (const chunk of rest) {
      if (written >= chunk.length) written -= chunk.length;
      else {
        next.push(written > 0 ? chunk.subarray(written) : chunk);
        written = 0;
      }
    }
    rest = next;
  }
}

export interface PartialFile {
  path: string;
  /** Descriptor open for writing, -1 once closed (`closePartial`); whoever writes closes it. */
  fd: number;
}

/**
 * Closes a partial file's descriptor, once: it is marked closed first, as a descriptor number
 * closed twice may by then be another file's or a socket's (close releases it even when it
 * fails).
 */
export function closePartial(file: PartialFile): void {
  const { fd } = file;
  if (fd < 0) return;
  file.fd = -1;
  fsSync.closeSync(fd);
}

/**
 * A new partial file, named after the worker writing it, created and opened for writing. Its
 * folder is made once per process (and again when it was removed since), not once per file.
 */
export async function openPartialFile(root: string, owner: string): Promise<PartialFile> {
  const dir = path.join(root, PARTIAL_DIR);
  const safeOwner = owner.replace(/[^A-Za-z0-9._-]/g, '_');
  const file = path.join(dir, `${safeOwner}${OWNER_SEPARATOR}${randomUUID()}.part`);
  return { path: file, fd: await inDir(dir, () => openFd(file, 'wx')) };
}

/** The worker that wrote a partial file, from its name; undefined for names without one. */
export function partialOwner(name: string): string | undefined {
  const at = name.lastIndexOf(OWNER_SEPARATOR);
  return at > 0 && name.endsWith('.part') ? name.slice(0, at) : undefined;
}

export interface Placed {
  /** Path relative to the data directory, with `/` separators. */
  relPath: string;
  /** True when a file with these bytes was stored already (the partial file was dropped). */
  existed: boolean;
}

async function fsyncDir(dir: string): Promise<void> {
  const fd = fsSync.openSync(dir, 'r');
  try {
    await fsyncFd(fd);
  } finally {
    fsSync.closeSync(fd);
  }
}

/**
 * Moves a complete partial file (already fsynced, its bytes hashed) to its content address,
 * over a file already there: the same bytes stored once. The file there is replaced, not
 * trusted by its size: a stored file damaged in place (a flipped bit) would otherwise never be
 * healed by a fresh download, and `media verify` would report it for good. `existed` says a
 * file of that size was there.
 */
export async function placeFile(input: {
  dataDir: string;
  root: string;
  partial: string;
  sha256: string;
  ext: string;
  bytes: number;
}): Promise<Placed> {
  const final = path.join(input.root, contentPath(input.sha256, input.ext));
  const relPath = path.relative(input.dataDir, final).split(path.sep).join('/');
  const existing = statIfExists(final);
  await inDir(path.dirname(final), () => renameFile(input.partial, final));
  await fsyncDir(path.dirname(final));
  return { relPath, existed: existing?.isFile() === true && existing.size === input.bytes };
}

/**
 * Removes the partial files of downloads that died with their worker: those whose owner is not
 * alive, and any last written more than `olderThanMs` ago (a live download writes to its file
 * all the time). Returns how many.
 */
export async function removeOrphanPartials(
  root: string,
  isAlive: (owner: string) => Promise<boolean>,
  olderThanMs: number,
  nowMs: number,
): Promise<number> {
  const dir = path.join(root, PARTIAL_DIR);
  const names = await fs.readdir(dir).catch(() => [] as string[]);
  let removed = 0;
  for (const name of names) {
    if (!name.endsWith('.part')) continue;
    const file = path.join(dir, name);
    const stat = await fs.stat(file).catch(() => undefined);
    if (!stat) continue;
    const owner = partialOwner(name);
    const orphan =
      nowMs - stat.mtimeMs > olderThanMs || owner === undefined || !(await isAlive(owner));
    if (orphan) {
      await fs.rm(file, { force: true });
      removed += 1;
    }
  }
  return removed;
}

/** sha256 (hex) and size of a file, streamed. */
export async function hashFile(file: string): Promise<{ sha256: string; bytes: number }> {
  const hash = createHash('sha256');
  let bytes = 0;
  for await (const chunk of createReadStream(file)) {
    hash.update(chunk as Buffer);
    bytes += (chunk as Buffer).length;
  }
  return { sha256: hash.digest('hex'), bytes };
}
