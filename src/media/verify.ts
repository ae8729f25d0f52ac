/**
 * Re-hashing saved media: every file a saved row points at must exist under the data directory
 * and hash to the sha256 its rows recorded (its name says the same). And the other way round:
 * stored files no saved row points at (orphans), which only take room.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { hashFile, isContentPath } from './storage.ts';

/** A file that saved rows point at, as the store lists them. */
export interface StoredFileRef {
  path: string;
  sha256: string;
  bytes: number;
  /** Saved rows pointing at the file. */
  rows: number;
}

export interface VerifyProblem {
  path: string;
  sha256: string;
  problem: 'missing' | 'corrupt';
  /** What is wrong, for humans. */
  detail: string;
  /** Saved rows pointing at the file. */
  rows: number;
}

export interface VerifyReport {
  files: number;
  bytes: number;
  ok: number;
  problems: VerifyProblem[];
}

export async function verifyFiles(
  dataDir: string,
  files: Iterable<StoredFileRef>,
): Promise<VerifyReport> {
  const report: VerifyReport = { files: 0, bytes: 0, ok: 0, problems: [] };
  for (const file of files) {
    report.files += 1;
    const full = path.resolve(dataDir, file.path);
    const problem = (kind: VerifyProblem['problem'], detail: string) =>
      report.problems.push({
        path: file.path,
        sha256: file.sha256,
        problem: kind,
        detail,
        rows: file.rows,
      });
    const stat = await fs.stat(full).catch(() => undefined);
    if (!stat?.isFile()) {
      problem('missing', 'no such file');
      continue;
    }
    const actual = await hashFile(full);
    report.bytes += actual.bytes;
    if (actual.sha256 !== file.sha256) {
      problem(
        'corrupt',
        `sha256 is ${actual.sha256} (${actual.bytes} bytes), recorded ${file.sha256} (${file.bytes} bytes)`,
      );
    } else report.ok += 1;
  }
  return report;
}

export interface Orphans {
  files: number;
  bytes: number;
  /** Paths relative to the data directory, with `/` separators. */
  paths: { path: string; bytes: number }[];
}

/**
 * Stored files under `roots` (media folders) that no saved row points at (`known`: paths
 * relative to the data directory). A file is left this way when its download ended without a
 * saved row: the worker died between placing it and committing the row, and the row then
 * failed or expired. A worker saving files meanwhile may show its newest ones here for a moment.
 * Partial files (`.partial/`) are not stored files and are not looked at.
 */
export async function findOrphans(
  dataDir: string,
  roots: readonly string[],
  known: ReadonlySet<string>,
): Promise<Orphans> {
  const orphans: Orphans = { files: 0, bytes: 0, paths: [] };
  for (const root of new Set(roots)) {
    const shards = await fs.readdir(root, { withFileTypes: true }).catch(() => []);
    for (const shard of shards) {
      // `.partial` and anything else that cannot hold stored files is passed over.
      if (!shard.isDirectory() || shard.name.length !== 2) continue;
      const dir = path.join(root, shard.name);
      for (const entry of await fs.readdir(dir, { withFileTypes: true }).catch(() => [])) {
        if (!entry.isFile() || !isContentPath(shard.name, entry.name)) continue;
        const full = path.join(dir, entry.name);
        const rel = path.relative(dataDir, full).split(path.sep).join('/');
        if (known.has(rel)) continue;
        const stat = await fs.stat(full).catch(() => undefined);
        if (!stat) continue;
        orphans.files += 1;
        orphans.bytes += stat.size;
        orphans.paths.push({ path: rel, bytes: stat.size });
      }
    }
  }
  orphans.paths.sort((a, b) => a.path.localeCompare(b.path));
  return orphans;
}
