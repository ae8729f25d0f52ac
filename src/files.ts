import fs from 'node:fs';

/**
 * `fs.statSync`, or undefined when nothing is at `file`. Only a missing entry (ENOENT) counts as
 * nothing: a parent that is a file (ENOTDIR) or a folder that cannot be read (EACCES) throws, on
 * every Node (22 and later return undefined for ENOTDIR under `throwIfNoEntry: false`; 20 throws).
 */
export function statIfExists(file: string): fs.Stats | undefined {
  try {
    return fs.statSync(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/** `fs.lstatSync` with the same rule as {@link statIfExists}. */
export function lstatIfExists(file: string): fs.Stats | undefined {
  try {
    return fs.lstatSync(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}
