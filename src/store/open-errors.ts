/**
 * Why a database could not be opened, in one line that names the file and what to do: the
 * errors of `openStore` a person can act on (exit 3, the environment), instead of a stack trace.
 *
 * | problem                              | code            |
 * |---|---|
 * | the path is a directory              | STORE_UNUSABLE  |
 * | its folder cannot be made            | STORE_UNUSABLE  |
 * | no permission, read-only file or disk| STORE_READONLY  |
 * | no room in TMPDIR for a read copy    | STORE_FULL      |
 * | not a SQLite file, or damaged        | STORE_CORRUPT   |
 * | locked by another process too long   | STORE_LOCKED    |
 * | the disk is full                     | STORE_FULL      |
 * | the disk reports an I/O error        | STORE_IO_ERROR  |
 * | a SQLite file of another application | STORE_FOREIGN   |
 */
import fs from 'node:fs';
import path from 'node:path';
import { HarvestError } from '../errors.ts';

const ENVIRONMENT = 3;

function storeError(code: string, message: string, cause: unknown): HarvestError {
  return new HarvestError(code, message, { cause, exitCode: ENVIRONMENT });
}

/** The database's folder could not be created (`mkdir -p`). */
export function folderError(file: string, folder: string, error: unknown): HarvestError {
  const errno = (error as NodeJS.ErrnoException).code ?? String(error);
  const why =
    errno === 'ENOTDIR' || errno === 'EEXIST'
      ? `${folder} is not a folder`
      : errno === 'EACCES' || errno === 'EPERM' || errno === 'EROFS'
        ? `no permission to create ${folder} (${errno})`
        : `cannot create ${folder} (${errno})`;
  return storeError(
    'STORE_UNUSABLE',
    `cannot open the database ${file}: ${why}; set HARVEST_DB (or HARVEST_DATA_DIR) to a writable place`,
    error,
  );
}

/** The path names a directory. */
export function directoryError(file: string): HarvestError {
  return storeError(
    'STORE_UNUSABLE',
    `the database path ${file} is a directory: set HARVEST_DB to a file, e.g. ${file}/harvest.db`,
    undefined,
  );
}

/**
 * An error of better-sqlite3 while the database is opened, configured or migrated, translated
 * when it is one of the table above; anything else is returned as it is.
 */
export function openError(file: string, readonly: boolean, error: unknown): unknown {
  const code = (error as { code?: unknown }).code;
  if (typeof code !== 'string' || !code.startsWith('SQLITE_')) return error;
  if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) {
    return storeError(
      'STORE_LOCKED',
      `the database ${file} is locked by another process (${code}); wait for it to finish, ` +
        'or stop the other harvest (or sqlite3 shell) holding it, and try again',
      error,
    );
  }
  if (code.startsWith('SQLITE_READONLY') || code.startsWith('SQLITE_CANTOPEN')) {
    if (!readonly && readOnlyFolder(file)) {
      return storeError(
        'STORE_READONLY',
        `cannot write the database ${file} (${code}): its folder ${path.dirname(file)} is ` +
          'read-only (a read-only mount, or no write permission); commands that write (run, ' +
          'worker, cancel) need it writable, while status, export, report and media read it ' +
          'as it is',
        error,
      );
    }
    const what = readonly ? 'read' : 'write';
    return storeError(
      'STORE_READONLY',
      `cannot ${what} the database ${file} (${code}): check the permissions of the file and of ` +
        'its folder (SQLite writes -wal and -shm files beside it), or set HARVEST_DB elsewhere',
      error,
    );
  }
  const disk = diskError(file, error);
  if (disk !== error) return disk;
  if (code === 'SQLITE_NOTADB' || code.startsWith('SQLITE_CORRUPT')) {
    return storeError(
      'STORE_CORRUPT',
      `${file} is not a harvest database or is damaged (${code}): set HARVEST_DB to the right ` +
        'file, or move this one away to start a new database',
      error,
    );
  }
  return error;
}

/** Whether `file` names a database (an absolute path) whose folder cannot be written. */
function readOnlyFolder(file: string): boolean {
  if (!path.isAbsolute(file)) return false;
  try {
    fs.accessSync(path.dirname(file), fs.constants.W_OK);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'ENOENT';
  }
}

/** The database's folder is read-only and the temp folder has no room for a copy to read. */
export function copyRoomError(
  file: string,
  temp: string,
  bytes: number,
  free: number | undefined,
  cause?: unknown,
): HarvestError {
  const room = free === undefined ? 'which filled up' : `where ${megabytes(free)} are free`;
  return storeError(
    'STORE_FULL',
    `the folder of ${file} is read-only, so harvest reads a copy of the database, which needs ` +
      `${megabytes(bytes)} in ${temp}, ${room}: set TMPDIR to a folder with room, or make the ` +
      'database folder writable',
    cause,
  );
}

/** Copying the database out of its read-only folder failed (cannot read it, temp full). */
export function readCopyError(
  file: string,
  temp: string,
  bytes: number,
  error: unknown,
): HarvestError {
  const errno = (error as NodeJS.ErrnoException).code ?? String(error);
  if (errno === 'ENOSPC') return copyRoomError(file, temp, bytes, undefined, error);
  return storeError(
    'STORE_READONLY',
    `cannot read the database ${file} (${errno}): check the permissions of the file, or set ` +
      'HARVEST_DB elsewhere',
    error,
  );
}

function megabytes(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

/**
 * The disk holding the database is full, or reports an I/O error (SQLITE_FULL, SQLITE_IOERR*),
 * whenever it happens: while the database is opened, or later while a command writes to it
 * (planning a run: src/cli/main.ts passes a command's errors through `openError`). Anything
 * else is returned as it is.
 */
export function diskError(file: string, error: unknown): unknown {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return error;
  if (code === 'SQLITE_FULL') {
    return storeError(
      'STORE_FULL',
      `the disk holding the database ${file} is full (${code}): free some space, or set ` +
        'HARVEST_DB (or HARVEST_DATA_DIR) to a disk with room',
      error,
    );
  }
  if (code.startsWith('SQLITE_IOERR')) {
    return storeError(
      'STORE_IO_ERROR',
      `cannot read or write the database ${file} (${code}): the disk or file system reported an ` +
        'I/O error (full, removed or failing?); check it, or set HARVEST_DB elsewhere',
      error,
    );
  }
  return error;
}

/**
 * A SQLite file with tables but no harvest schema version: another application's database,
 * which harvest neither migrates into nor reads.
 */
export function foreignError(
  file: string,
  tables: readonly string[],
  schemaVersion: number,
): HarvestError {
  // harvest's own tables without a schema version: a copy made by `sqlite3 FILE .dump`, which
  // does not keep `user_version`, rather than another application's file.
  const own = ['pipelines', 'runs', 'tasks', 'calls', 'results'];
  if (own.every((name) => tables.includes(name))) {
    return storeError(
      'STORE_FOREIGN',
      `${file} has harvest's tables but no schema version (restored from \`sqlite3 .dump\`, which ` +
        `drops it?): if this harvest made it, set it with \`sqlite3 ${file} 'PRAGMA user_version = ` +
        `${schemaVersion}'\` (an older harvest's: the version it had) and try again`,
      undefined,
    );
  }
  const shown = tables.slice(0, 5).join(', ') + (tables.length > 5 ? ', …' : '');
  return storeError(
    'STORE_FOREIGN',
    `${file} is a SQLite database, but not harvest's: it has tables (${shown}) and no harvest ` +
      'schema version; point HARVEST_DB elsewhere',
    undefined,
  );
}
