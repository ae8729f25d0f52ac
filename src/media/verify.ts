/**
 * Re-hashing saved media: every file a saved row points at must exist under the data directory
 * and hash to the sha256 its rows recorded (its name says the same).
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import type { StoredFileRef } from '../store/index.ts';
import { hashFile } from './storage.ts';

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
