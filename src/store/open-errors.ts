/**
 * Why a database could not be opened, in one line that names the file and what to do: the
 * errors of `openStore` a person can act on (exit 3, the environment), instead of a stack trace.
 *
 * | problem                              | code            |
 * |---|---|
 * | the path is a directory              | STORE_UNUSABLE  |
 * | its folder cannot be made            | STORE_UNUSABLE  |
 * | no permission, read-only file or disk| STORE_READONLY  |
 * | not a SQLite file, or damaged        | STORE_CORRUPT   |
 * | locked by another process too long   | STORE_LOCKED    |
 */
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
    const what = readonly ? 'read' : 'write';
    return storeError(
      'STORE_READONLY',
      `cannot ${what} the database ${file} (${code}): check the permissions of the file and of ` +
        'its folder (SQLite writes -wal and -shm files beside it), or set HARVEST_DB elsewhere',
      error,
    );
  }
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
