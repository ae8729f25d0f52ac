/** What `harvest media`, `media verify` and `media retry` do, loaded only when they run. */
import fs from 'node:fs/promises';
import path from 'node:path';
import { maskUrl, type Settings } from '../../config.ts';
import { HarvestError } from '../../errors.ts';
import type { MediaKind } from '../../media/kinds.ts';
import { mediaRoot } from '../../media/storage.ts';
import { findOrphans, type Orphans, verifyFiles } from '../../media/verify.ts';
import { assertRedisReachable, createRedis } from '../../queue/connection.ts';
import { type MediaPause, resumeMediaQueue } from '../../queue/media-pause.ts';
import { harvestKeys, QUEUES } from '../../queue/names.ts';
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

export interface MediaRetryOptions {
  kind?: MediaKind;
  /** Also queue items whose URL expired: each is re-issued, a billed search. */
  reissue: boolean;
  json: boolean;
}

/** What `harvest media retry` did. */
export interface MediaRetryReport {
  runId: string | null;
  /** Items queued again, their URL still valid: downloaded with no new call. */
  requeued: number;
  /** Items queued again whose URL expired: re-issued (`--reissue`). */
  reissued: number;
  /** Items left as they were: their URL expired, and `--reissue` was not given. */
  expiredLeft: number;
  /** The media queue's pause this ended (a full disk), if one was in force. */
  resumedPause: MediaPause | null;
  /** Set when Redis did not answer: the queue could not be resumed. */
  redisUnreachable?: string;
}

/**
 * `harvest media retry`: failed and expired media items go back to pending with their attempts
 * afresh, and a media queue paused for a full disk is resumed; the media role (a running worker,
 * or the next) downloads them. An item whose URL has expired needs a fresh URL, a billed search:
 * it is queued only with `--reissue`. No call is made here.
 */
export async function mediaRetry(
  settings: Settings,
  runId: string | undefined,
  opts: MediaRetryOptions,
): Promise<void> {
  const store = openStore(settings.dbPath, { onReadOnlyFolder: sayReadOnlyFolder });
  const nowMs = Date.now();
  let report: MediaRetryReport;
  try {
    if (runId !== undefined && !store.runs.get(runId)) {
      throw new HarvestError('RUN_NOT_FOUND', `no run ${runId} in ${settings.dbPath}`, {
        exitCode: EXIT.BAD_INPUT,
      });
    }
    const ended = store.media.ended({
      ...(runId === undefined ? {} : { runId }),
      ...(opts.kind === undefined ? {} : { kind: opts.kind }),
    });
    const live = ended.filter((r) => r.expiresAt === null || r.expiresAt > nowMs);
    const expired = ended.filter((r) => r.expiresAt !== null && r.expiresAt <= nowMs);
    const requeued = store.media.requeue(
      live.map((r) => r.id),
      true,
      nowMs,
    );
    const reissued = opts.reissue
      ? store.media.requeue(
          expired.map((r) => r.id),
          false,
          nowMs,
        )
      : 0;
    report = {
      runId: runId ?? null,
      requeued,
      reissued,
      expiredLeft: opts.reissue ? 0 : expired.length,
      resumedPause: null,
    };
  } finally {
    store.close();
  }
  Object.assign(report, await resumeMediaQueueOf(settings));
  print(opts.json ? JSON.stringify(report, null, 2) : formatMediaRetry(report));
}

/** Resumes the media queue (paused for a full disk, say); what it ended, or why it could not. */
async function resumeMediaQueueOf(
  settings: Settings,
): Promise<Pick<MediaRetryReport, 'resumedPause' | 'redisUnreachable'>> {
  try {
    await assertRedisReachable(settings.redisUrl, 1500);
  } catch {
    return {
      resumedPause: null,
      redisUnreachable: `Redis at ${maskUrl(settings.redisUrl)} is not reachable: a paused media queue stays paused until this is run again`,
    };
  }
  const { Queue } = await import('bullmq');
  const redis = createRedis(settings.redisUrl, 'client');
  const queue = new Queue(QUEUES.media, { connection: redis, prefix: settings.queuePrefix });
  queue.on('error', () => {});
  try {
    const pause = await resumeMediaQueue(queue, redis, harvestKeys(settings.queuePrefix));
    return { resumedPause: pause ?? null };
  } finally {
    await queue.close().catch(() => {});
    redis.disconnect();
  }
}

export function formatMediaRetry(r: MediaRetryReport): string {
  const of = r.runId ? `of run ${r.runId}` : 'of every run';
  const lines = [
    `queued again ${r.requeued} media items ${of} whose URL still works: downloaded with no new call`,
  ];
  if (r.reissued > 0) {
    lines.push(
      `queued ${r.reissued} items whose URL expired: each gets a fresh URL, a billed search`,
    );
  }
  if (r.expiredLeft > 0) {
    lines.push(
      `left ${r.expiredLeft} items whose URL expired: --reissue queues them too (a billed search each)`,
    );
  }
  if (r.resumedPause) {
    lines.push(
      `media queue resumed (it was paused: ${r.resumedPause.code}: ${terminalText(r.resumedPause.reason)})`,
    );
  }
  if (r.redisUnreachable) lines.push(`note: ${r.redisUnreachable}`);
  if (r.requeued + r.reissued > 0) {
    lines.push('a worker with the media role saves them (`harvest worker`, or the one running)');
  }
  return lines.join('\n');
}
