/**
 * What a command that reads the database says when its folder cannot be written (a read-only
 * mount, an archived dataset): one line on stderr, so stdout keeps only what was asked for.
 */
import path from 'node:path';
import type { ReadOnlyFolder } from '../store/read-only-folder.ts';

export function readOnlyNotice(how: ReadOnlyFolder): string {
  if (!how.copy) return `${how.folder} is read-only: reading the database in place, read-only`;
  const mb = (how.copy.bytes / 1024 / 1024).toFixed(1);
  const temp = path.dirname(how.copy.dir);
  return `${how.folder} is read-only: reading a private copy of the database (${mb} MB in ${temp}, removed once open)`;
}

/** Says it on stderr (`openStore`'s `onReadOnlyFolder`). */
export function sayReadOnlyFolder(how: ReadOnlyFolder): void {
  process.stderr.write(`harvest: ${readOnlyNotice(how)}\n`);
}
