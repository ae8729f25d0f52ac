/**
 * Reading a database whose folder cannot be written: a read-only mount, an archived dataset.
 * SQLite reads a database in WAL mode (harvest's) only with its -wal and -shm files beside it,
 * or by making them there. Its `immutable` open, made for read-only media, takes a URI file
 * name, which the better-sqlite3 build leaves off (SQLITE_USE_URI=0). So:
 *
 * - both files there: a writer may have the database open; it is read in place, read-only
 *   (SQLite reads the -shm without writing it);
 * - else no writer can have it open (a writer makes both), and it cannot change while read:
 *   harvest reads a private copy in the temp folder, turned to rollback mode (which needs no
 *   file beside it) and unlinked as soon as it is open, so it leaves nothing behind. A copy
 *   left by a process killed while copying is removed by the next one.
 */
import fs from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Sqlite from 'better-sqlite3';
import { copyRoomError, readCopyError } from './open-errors.ts';

/** Told when the folder cannot be written: how the database is read. */
export interface ReadOnlyFolder {
  /** The database's folder. */
  folder: string;
  /** Read from a copy (its temp folder and size); read in place when absent. */
  copy?: { dir: string; bytes: number };
}

/** What SQLite opens, and what to remove once it has it open (or failed to). */
export interface ReadSource {
  path: string;
  /** A private copy, unlinked once open: no other connection can open it. */
  copy: boolean;
  /** Removes the copy; idempotent. SQLite keeps reading an unlinked file it has open. */
  release(): void;
}

const COPY_PREFIX = 'harvest-readonly-';

function writable(folder: string): boolean {
  try {
    fs.accessSync(folder, fs.constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

/** Where to open `file` read-only from (see the module's header). */
export function readOnlySource(file: string, tell?: (how: ReadOnlyFolder) => void): ReadSource {
  const folder = path.dirname(file);
  const inPlace = { path: file, copy: false, release() {} };
  if (writable(folder)) return inPlace;
  if (fs.existsSync(`${file}-wal`) && fs.existsSync(`${file}-shm`)) {
    tell?.({ folder });
    return inPlace;
  }
  const files = [file, `${file}-wal`].filter((f) => fs.existsSync(f));
  const bytes = files.reduce((sum, f) => sum + fs.statSync(f).size, 0);
  const temp = tmpdir();
  const free = freeBytes(temp);
  if (free !== undefined && free < bytes) throw copyRoomError(file, temp, bytes, free);
  removeStaleCopies(temp);
  const dir = fs.mkdtempSync(path.join(temp, `${COPY_PREFIX}${process.pid}-`));
  tell?.({ folder, copy: { dir, bytes } });
  const release = () => fs.rmSync(dir, { recursive: true, force: true });
  const copy = path.join(dir, path.basename(file));
  try {
    fs.copyFileSync(file, copy);
    if (files.length > 1) fs.copyFileSync(`${file}-wal`, `${copy}-wal`);
  } catch (error) {
    release();
    throw readCopyError(file, temp, bytes, error);
  }
  try {
    toRollbackMode(copy);
  } catch (error) {
    // Not a database, or damaged: openStore says so, naming the file asked for.
    release();
    throw error;
  }
  return { path: copy, copy: true, release };
}

/** Moves what the -wal holds into the copy and turns it to rollback mode (a no-op if it is). */
function toRollbackMode(copy: string): void {
  const db = new Sqlite(copy, { fileMustExist: true });
  try {
    db.pragma('journal_mode = DELETE');
  } finally {
    db.close();
  }
}

function freeBytes(folder: string): number | undefined {
  try {
    const info = fs.statfsSync(folder);
    return info.bavail * info.bsize;
  } catch {
    return undefined;
  }
}

/** Copies of processes that no longer run (killed while copying). */
function removeStaleCopies(temp: string): void {
  let names: string[];
  try {
    names = fs.readdirSync(temp);
  } catch {
    return;
  }
  for (const name of names) {
    const pid = Number(/^harvest-readonly-(\d+)-/.exec(name)?.[1]);
    if (!pid || pid === process.pid || running(pid)) continue;
    fs.rmSync(path.join(temp, name), { recursive: true, force: true });
  }
}

function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
