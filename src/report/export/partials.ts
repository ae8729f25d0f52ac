/**
 * The hidden partial file an export writes before renaming it into place,
 * `.NAME.PID-TAGRAND.partial`, and the removal of those left by processes that no longer run (an
 * export killed with SIGKILL cannot remove its own).
 *
 * A process id says whether a process runs only on the machine, and in the PID namespace, that
 * gave it, and only until that machine restarts: TAG (8 hex digits) names the host, its boot and
 * the PID namespace, and a partial file is judged by its PID only where TAG is this process's.
 * Any other (a folder shared with another host or container, a file from before a restart, or
 * one of an earlier harvest, which wrote RAND alone) is removed only once unchanged for a day:
 * a live export adds to its file as it goes.
 */
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** Partial files not judged by their PID are removed after this long without a change. */
export const UNJUDGED_PARTIAL_AGE_MS = 24 * 3600 * 1000;

const PARTIAL = /^\.(.+)\.(\d+)-([0-9a-f]{16}|[0-9a-f]{8})\.partial$/;

function readOr(file: string, read: (file: string) => string): string {
  try {
    return read(file);
  } catch {
    return '';
  }
}

let tag: string | undefined;
/** This host, boot and PID namespace, as 8 hex digits (Linux; elsewhere the host name alone). */
export function hostTag(): string {
  tag ??= createHash('sha256')
    .update(os.hostname())
    .update(`\0${readOr('/proc/sys/kernel/random/boot_id', (f) => fs.readFileSync(f, 'utf8'))}`)
    .update(`\0${readOr('/proc/self/ns/pid', fs.readlinkSync)}`)
    .digest('hex')
    .slice(0, 8);
  return tag;
}

/** Where an export to `target` (a full path) writes before its rename. */
export function partialPath(target: string, pid = process.pid): string {
  const rand = randomBytes(4).toString('hex');
  return path.join(
    path.dirname(target),
    `.${path.basename(target)}.${pid}-${hostTag()}${rand}.partial`,
  );
}

/** True unless this machine says no process `pid` runs (one of another user's does). */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

function stale(pid: number, token: string, changedAtMs: number, nowMs: number): boolean {
  if (token.length === 16 && token.slice(0, 8) === hostTag()) {
    return !running(pid);
  }
  return nowMs - changedAtMs > UNJUDGED_PARTIAL_AGE_MS;
}

/**
 * Removes the partial files in `dir` of exports that no longer run; returns their names. Never
 * throws: a file it cannot judge or remove stays.
 */
export function removeStalePartials(dir: string, nowMs = Date.now()): string[] {
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const name of names) {
    const match = PARTIAL.exec(name);
    if (!match) continue;
    const file = path.join(dir, name);
    try {
      const stat = fs.lstatSync(file);
      if (!stat.isFile() || !stale(Number(match[2]), match[3]!, stat.mtimeMs, nowMs)) continue;
      fs.unlinkSync(file);
      removed.push(name);
    } catch {
      // gone already, or not ours to remove
    }
  }
  return removed;
}
