/**
 * `harvest media verify` next to a run that saves files: the saved rows are read before the
 * (slow) re-hashing and the folders are listed after it, so a file saved meanwhile must not be
 * called an orphan ("no saved row points at it ... may be deleted").
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { mediaVerify } from '../../../src/cli/actions/media.ts';
import { openStore, type Store } from '../../../src/store/index.ts';
import { testSettings } from '../../helpers/settings.ts';
import { resultsEvent, seedRun, webItem } from '../store/helpers.ts';

const T0 = Date.UTC(2026, 10, 22, 10, 15, 0);
const SIGNED =
  'https://media.example/s1.png?X-Goog-Date=20261122T101500Z&X-Goog-Expires=86400&X-Goog-Signature=ab';

let dir: string | undefined;
let store: Store | undefined;
afterEach(() => {
  vi.restoreAllMocks();
  store?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
  dir = undefined;
  store = undefined;
});

/** Writes `text` as a stored file under media/, last modified an hour ago; its path and hash. */
function storedFile(dataDir: string, text: string): { path: string; sha256: string } {
  const sha256 = createHash('sha256').update(text).digest('hex');
  const rel = `media/${sha256.slice(0, 2)}/${sha256}.png`;
  const full = path.join(dataDir, rel);
  fs.mkdirSync(path.dirname(full), { recursive: true });
  fs.writeFileSync(full, text);
  const hourAgo = new Date(Date.now() - 3_600_000);
  fs.utimesSync(full, hourAgo, hourAgo);
  return { path: rel, sha256 };
}

describe('media verify', () => {
  it('does not call a file saved (or placed) while it verifies an orphan; a real orphan still is', async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'harvest-verify-'));
    const settings = testSettings({ dir, prefix: 'test-unused', apiUrl: 'http://127.0.0.1:9' });
    store = openStore(settings.dbPath, { now: () => T0 + 5000 });
    const { runId } = seedRun(store);
    store.media.configure({
      runId,
      kinds: ['screenshot'],
      dir: 'media',
      maxBytes: 1000,
      marginMaxMs: 300_000,
    });
    store.applyEvents([
      resultsEvent(runId, 't0', [webItem(1, { screenshot: SIGNED })], { fetchedAt: T0 + 1000 }),
    ]);
    const [row] = store.media.pendingOfTask(runId, 't0');
    expect(row).toBeDefined();
    // The download's file is in place; its row is committed once the verify has read the rows.
    const saving = storedFile(dir, 'screenshot bytes');
    const orphan = storedFile(dir, 'left by a worker that died');
    // Made (its ctime, which no utimes moves back) before the verify begins.
    await new Promise((resolve) => setTimeout(resolve, 150));

    let out = '';
    vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
      out += String(chunk);
      return true;
    });
    const verifying = mediaVerify(settings, undefined, true);
    expect(
      store.media.markSaved(row!.id, {
        sha256: saving.sha256,
        path: saving.path,
        bytes: 'screenshot bytes'.length,
        contentType: 'image/png',
        sourceUrl: SIGNED,
      }),
    ).toBe(true);
    // Placed during the verify, its row not committed yet (a store worker records it later).
    const sha = createHash('sha256').update('placed just now').digest('hex');
    const placed = path.join(dir, 'media', sha.slice(0, 2), `${sha}.png`);
    fs.mkdirSync(path.dirname(placed), { recursive: true });
    fs.writeFileSync(placed, 'placed just now');
    expect(await verifying).toBe(0);
    vi.restoreAllMocks();

    const report = JSON.parse(out) as { orphans: { files: number; paths: { path: string }[] } };
    expect(report.orphans.paths.map((p) => p.path)).toEqual([orphan.path]);
    expect(report.orphans.files).toBe(1);
  });
});
