/** What `harvest media` and `harvest media verify` do, loaded only when they run. */
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Settings } from '../../config.ts';
import { HarvestError } from '../../errors.ts';
import { mediaRoot } from '../../media/storage.ts';
import { findOrphans, type Orphans, verifyFiles } from '../../media/verify.ts';
import { MEDIA_STATUSES, type MediaCounts, openStore, type Store } from '../../store/index.ts';
import { EXIT } from '../exit-codes.ts';
import { sayReadOnlyFolder } from '../read-only-notice.ts';
import { terminalText } from '../terminal-text.ts';

function print(text: string): void {
  process.stdout.write(`${text}\n`);
}

function openOrFail(settings: Settings, runId: string | undefined): Store {
  const store = openStore(settings.dbPath, { readonly: true, onReadOnlyFolder: sayReadOnlyFolder });
  if (runId !== undefined && !store.runs.get(runId)) {
    store.close();
    throw new HarvestError('RUN_NOT_FOUND', `no run ${runId} in ${settings.dbPath}`, {
      exitCode: EXIT.BAD_INPUT,
    });
  }
  return store;
}

export async function mediaListing(
  settings: Settings,
  runId: string | undefined,
  json: boolean,
): Promise<void> {
  const store = openOrFail(settings, runId);
  try {
    const counts = store.mediaCounts(runId);
    if (json)
      print(
        JSON.stringify({ runId: runId ?? null, dataDir: settings.dataDir, ...counts }, null, 2),
      );
    else print(formatMediaCounts(counts, runId, settings.dataDir));
  } finally {
    store.close();
  }
}

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 ** 2) return `${(bytes / 1024).toFixed(1)} KiB`;
  if (bytes < 1024 ** 3) return `${(bytes / 1024 ** 2).toFixed(1)} MiB`;
  return `${(bytes / 1024 ** 3).toFixed(2)} GiB`;
}

export function formatMediaCounts(
  c: MediaCounts,
  runId: string | undefined,
  dataDir: string,
): string {
  const kinds = Object.entries(c.byKind);
  const title = `media of ${runId ? `run ${runId}` : 'every run'}`;
  if (kinds.length === 0) return `${title}: none requested`;
  const header = ['kind', ...MEDIA_STATUSES];
  const rows = [
    ...kinds.map(([kind, n]) => [kind, ...MEDIA_STATUSES.map((s) => String(n[s]))]),
    ['total', ...MEDIA_STATUSES.map((s) => String(c.total[s]))],
  ];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    `  ${cells.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  ')}`;
  const lines = [title, line(header), ...rows.map(line)];
  lines.push(
    `  re-issued ${c.reissuedItems} items (${c.reissues} fresh URLs) with ${c.reissueCalls} calls, ${c.reissueCredits} credits${c.reissueUnknownCalls > 0 ? ` +${c.reissueUnknownCalls} unknown` : ''}`,
    `  stored    ${c.files} files, ${formatBytes(c.bytesStored)} under ${dataDir}`,
  );
  for (const f of c.failures) {
    lines.push(`  ${f.status.padEnd(9)} ${f.code} ${f.count}: ${terminalText(f.message)}`);
  }
  return lines.join('\n');
}

/** Orphans listed by name in the text output; `--json` lists them all. */
const ORPHANS_SHOWN = 10;

/**
 * How much earlier than the clock a file's time may read: file systems stamp files with the
 * kernel's coarse clock, a tick behind. (Where times are whole seconds, a file placed in the
 * verify's first second may still be listed: it loses nothing.)
 */
const MTIME_SLACK_MS = 50;

/**
 * The orphans of a listing made while runs may be saving files: the saved rows were read
 * before the (slow) re-hashing and the listing, so each candidate is checked again against the
 * rows as they are now. A file placed since the verify began is passed over too: its row may
 * still be on its way (a worker records a file once it is in place). A file saved during the
 * verify is never called an orphan.
 */
async function settledOrphans(
  settings: Settings,
  candidates: Orphans,
  startedAt: number,
): Promise<Orphans> {
  if (candidates.files === 0) return candidates;
  const store = openStore(settings.dbPath, { readonly: true });
  let saved: Set<string>;
  try {
    saved = new Set(store.savedFiles().map((f) => f.path));
  } finally {
    store.close();
  }
  const orphans: Orphans = { files: 0, bytes: 0, paths: [] };
  for (const o of candidates.paths) {
    if (saved.has(o.path)) continue;
    const stat = await fs.stat(path.join(settings.dataDir, o.path)).catch(() => undefined);
    // A rename into place changes the file's ctime, not its mtime (its last write, earlier).
    if (!stat || Math.max(stat.mtimeMs, stat.ctimeMs) >= startedAt - MTIME_SLACK_MS) continue;
    orphans.files += 1;
    orphans.bytes += o.bytes;
    orphans.paths.push(o);
  }
  return orphans;
}

/**
 * Exit code: 0 when every saved file is there with its bytes, 1 otherwise. Of the whole
 * database (no RUN), stored files no saved row points at are listed too; they take room but
 * lose nothing, so they do not change the exit code.
 */
export async function mediaVerify(
  settings: Settings,
  runId: string | undefined,
  json: boolean,
): Promise<number> {
  const store = openOrFail(settings, runId);
  let files: ReturnType<Store['savedFiles']>;
  let dirs: string[];
  try {
    files = store.savedFiles(runId);
    dirs = runId === undefined ? store.media.dirs() : [];
  } finally {
    store.close();
  }
  const startedAt = Date.now();
  const report = await verifyFiles(settings.dataDir, files);
  const orphans: Orphans | undefined =
    runId === undefined
      ? await settledOrphans(
          settings,
          await findOrphans(
            settings.dataDir,
            dirs.map((dir) => mediaRoot(settings.dataDir, dir)),
            new Set(files.map((f) => f.path)),
          ),
          startedAt,
        )
      : undefined;
  if (json) print(JSON.stringify(orphans ? { ...report, orphans } : report, null, 2));
  else {
    print(
      `verified ${report.files} files (${formatBytes(report.bytes)}): ${report.ok} ok, ${report.problems.length} missing or corrupt`,
    );
    for (const p of report.problems) print(`  ${p.problem.padEnd(7)} ${p.path}: ${p.detail}`);
    if (orphans && orphans.files > 0) {
      print(
        `${orphans.files} stored files (${formatBytes(orphans.bytes)}) that no saved row points at; they lose nothing, and may be deleted for the room:`,
      );
      for (const o of orphans.paths.slice(0, ORPHANS_SHOWN)) print(`  orphan  ${o.path}`);
      if (orphans.files > ORPHANS_SHOWN) {
        print(`  … and ${orphans.files - ORPHANS_SHOWN} more (--json lists them all)`);
      }
    }
  }
  return report.problems.length > 0 ? 1 : 0;
}
