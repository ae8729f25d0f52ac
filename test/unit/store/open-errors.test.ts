/**
 * The database errors a person can act on (exit 3, the environment), in one line naming the
 * file: a full disk and an I/O error among them, whether opening or writing later.
 */
import { describe, expect, it } from 'vitest';
import { HarvestError } from '../../../src/errors.ts';
import { diskError, openError } from '../../../src/store/open-errors.ts';

const FILE = '/data/harvest.db';

function sqliteError(code: string, message: string): Error {
  return Object.assign(new Error(message), { code });
}

describe('openError and diskError', () => {
  it('a full disk is the environment: STORE_FULL, exit 3, one line naming the file', () => {
    for (const translate of [
      (e: unknown) => openError(FILE, false, e),
      (e: unknown) => diskError(FILE, e),
    ]) {
      const error = translate(sqliteError('SQLITE_FULL', 'database or disk is full'));
      expect(error).toBeInstanceOf(HarvestError);
      expect(error).toMatchObject({ code: 'STORE_FULL', exitCode: 3 });
      const message = (error as HarvestError).message;
      expect(message).toContain(FILE);
      expect(message).toContain('is full');
      expect(message).not.toContain('\n');
    }
  });

  it('an I/O error (any SQLITE_IOERR_*) is the environment: STORE_IO_ERROR, exit 3', () => {
    for (const code of ['SQLITE_IOERR', 'SQLITE_IOERR_WRITE', 'SQLITE_IOERR_SHMSIZE']) {
      for (const error of [
        openError(FILE, true, sqliteError(code, 'disk I/O error')),
        diskError(FILE, sqliteError(code, 'disk I/O error')),
      ]) {
        expect(error).toMatchObject({ code: 'STORE_IO_ERROR', exitCode: 3 });
        expect((error as HarvestError).message).toContain(`${FILE} (${code})`);
      }
    }
  });

  it('diskError leaves every other error as it is', () => {
    const constraint = sqliteError('SQLITE_CONSTRAINT_UNIQUE', 'UNIQUE constraint failed');
    const plain = new Error('boom');
    expect(diskError(FILE, constraint)).toBe(constraint);
    expect(diskError(FILE, plain)).toBe(plain);
    expect(diskError(FILE, undefined)).toBeUndefined();
  });
});
