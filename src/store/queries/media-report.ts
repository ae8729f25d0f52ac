/**
 * What `harvest media`, `harvest media verify`, `harvest status` and the run summary read of
 * the media tables.
 */

import type { Database } from 'better-sqlite3';
import { MEDIA_KINDS, type MediaKind } from '../../media/kinds.ts';
import type { StoredFileRef } from '../../media/verify.ts';
import { MEDIA_STATUSES, type MediaStatus } from '../media.ts';

/** A run's media in one row: what `harvest status` and progress show. */
export interface MediaSummary {
  requested: number;
  saved: number;
  pending: number;
  failed: number;
  expired: number;
  /** The deadline of the pending item due first, ms since the epoch; null when none pends. */
  oldestPendingDeadlineAt: number | null;
}

export interface MediaFailure {
  status: 'failed' | 'expired';
  code: string;
  /** The reason of one of them (the latest). */
  message: string;
  count: number;
}

export interface MediaCounts {
  /** Rows per kind and status; kinds without rows are left out. */
  byKind: Partial<Record<MediaKind, Record<MediaStatus, number>>>;
  total: Record<MediaStatus, number>;
  /** Rows that needed at least one fresh URL, and the fresh URLs fetched in all. */
  reissuedItems: number;
  reissues: number;
  /** Searches called again for fresh URLs, and their known credits. */
  reissueCalls: number;
  reissueCredits: number;
  /** Re-issue calls whose cost is unknown (no answer, a LOST call): never counted as zero. */
  reissueUnknownCalls: number;
  /** Distinct files the saved rows point at, and their bytes. */
  files: number;
  bytesStored: number;
  failures: MediaFailure[];
}

export interface MediaReports {
  /** Undefined when the run saves no media. */
  mediaSummary(runId: string): MediaSummary | undefined;
  /** Of one run, or of every run. */
  mediaCounts(runId?: string): MediaCounts;
  /** The distinct files saved rows point at (of one run, or all). */
  savedFiles(runId?: string): StoredFileRef[];
}

const zeroStatuses = (): Record<MediaStatus, number> =>
  Object.fromEntries(MEDIA_STATUSES.map((s) => [s, 0])) as Record<MediaStatus, number>;

/** The statements of the media reports; `@run IS NULL` selects every run. */
function prepareReportStatements(db: Database) {
  return {
    summary: db.prepare<[string], Omit<MediaSummary, 'oldestPendingDeadlineAt'>>(
      `SELECT requested, saved, pending, failed, expired FROM run_media WHERE run_id = ?`,
    ),
    oldest: db
      .prepare<[string], number | null>(
        `SELECT MIN(deadline_at) FROM media WHERE run_id = ? AND status = 'pending'`,
      )
      .pluck(),
    counts: db.prepare<
      { run: string | null },
      { kind: MediaKind; status: MediaStatus; n: number; reissued: number; reissues: number }
    >(
      `SELECT kind, status, COUNT(*) AS n, SUM(reissues > 0) AS reissued, SUM(reissues) AS reissues
       FROM media WHERE @run IS NULL OR run_id = @run GROUP BY kind, status`,
    ),
    // One pass: with a single max() in the query, SQLite takes the bare error_message from the
    // row where updated_at is largest, the latest message of each group.
    failures: db.prepare<{ run: string | null }, MediaFailure & { latest: number }>(
      `SELECT status, COALESCE(error_code, 'UNKNOWN') AS code, COUNT(*) AS count,
              error_message AS message, MAX(updated_at) AS latest
       FROM media WHERE (@run IS NULL OR run_id = @run) AND status IN ('failed', 'expired')
       GROUP BY status, COALESCE(error_code, 'UNKNOWN') ORDER BY count DESC`,
    ),
    reissueCalls: db.prepare<
      { run: string | null },
      { calls: number; credits: number | null; unknown: number | null }
    >(
      `SELECT COUNT(*) AS calls, SUM(credits_used) AS credits,
         SUM(credits_used IS NULL) AS unknown FROM calls
       WHERE purpose = 'media-reissue' AND (@run IS NULL OR run_id = @run)`,
    ),
    files: db.prepare<{ run: string | null }, StoredFileRef>(
      `SELECT path, sha256, MAX(bytes) AS bytes, COUNT(*) AS rows FROM media
       WHERE status = 'saved' AND (@run IS NULL OR run_id = @run)
       GROUP BY path, sha256 ORDER BY path`,
    ),
  };
}

type ReportStatements = ReturnType<typeof prepareReportStatements>;

/** `MediaReports.mediaCounts`: of one run, or of every run (`run` null). */
function countMedia(s: ReportStatements, run: string | null): MediaCounts {
  const out: MediaCounts = {
    byKind: {},
    total: zeroStatuses(),
    reissuedItems: 0,
    reissues: 0,
    reissueCalls: 0,
    reissueCredits: 0,
    reissueUnknownCalls: 0,
    files: 0,
    bytesStored: 0,
    failures: s.failures.all({ run }).map(({ latest: _, ...failure }) => failure),
  };
  for (const row of s.counts.all({ run })) {
    const perKind = out.byKind[row.kind] ?? zeroStatuses();
    out.byKind[row.kind] = perKind;
    perKind[row.status] += row.n;
    out.total[row.status] += row.n;
    out.reissuedItems += row.reissued;
    out.reissues += row.reissues;
  }
  const calls = s.reissueCalls.get({ run });
  out.reissueCalls = calls?.calls ?? 0;
  out.reissueCredits = calls?.credits ?? 0;
  out.reissueUnknownCalls = calls?.unknown ?? 0;
  for (const f of s.files.all({ run })) {
    out.files += 1;
    out.bytesStored += f.bytes;
  }
  // Kinds in the order they are listed everywhere else.
  out.byKind = Object.fromEntries(
    MEDIA_KINDS.filter((k) => out.byKind[k]).map((k) => [k, out.byKind[k]]),
  );
  return out;
}

export function createMediaReports(db: Database): MediaReports {
  const s = prepareReportStatements(db);
  return {
    mediaSummary(runId) {
      const row = s.summary.get(runId);
      return row ? { ...row, oldestPendingDeadlineAt: s.oldest.get(runId) ?? null } : undefined;
    },
    mediaCounts: (runId) => countMedia(s, runId ?? null),
    savedFiles: (runId) => s.files.all({ run: runId ?? null }),
  };
}
