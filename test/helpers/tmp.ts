/** Temporary folders for a test's database, pipelines and media; removed afterwards. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

export function tempDir(label = 'harvest'): { dir: string; remove(): void } {
  const dir = mkdtempSync(path.join(tmpdir(), `${label}-`));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}
