import { describe, expect, it } from 'vitest';
import { formatBytes, formatMediaCounts } from '../../../src/cli/actions/media.ts';
import { exitCodeFor } from '../../../src/cli/actions/run.ts';
import { formatMediaSummary, relativeTime } from '../../../src/cli/media-format.ts';
import { formatProgressLine, formatSummary } from '../../../src/cli/progress.ts';
import type { Progress } from '../../../src/run/wait.ts';
import type { MediaCounts } from '../../../src/store/index.ts';

const NOW = Date.UTC(2026, 10, 22, 10, 15, 0);
const zero = { pending: 0, saved: 0, failed: 0, expired: 0 };

describe('media for humans', () => {
  it('says when a deadline falls, relative to now', () => {
    expect(relativeTime(NOW + 42_000, NOW)).toBe('in 42 s');
    expect(relativeTime(NOW - 180_000, NOW)).toBe('3 min ago');
    expect(relativeTime(NOW + 5_400_000, NOW)).toBe('in 1.5 h');
  });

  it('summarises a run: saved of requested, what is left, the oldest pending deadline', () => {
    const summary = {
      requested: 12,
      saved: 9,
      pending: 2,
      failed: 1,
      expired: 0,
      oldestPendingDeadlineAt: NOW + 42_000,
    };
    expect(formatMediaSummary(summary, NOW)).toBe(
      'saved 9/12 (pending 2, failed 1), oldest pending due in 42 s (2026-11-22T10:15:42.000Z)',
    );
    expect(
      formatMediaSummary(
        { ...summary, saved: 12, pending: 0, failed: 0, oldestPendingDeadlineAt: null },
        NOW,
      ),
    ).toBe('saved 12/12');
    const progress: Progress = {
      runId: 'r1',
      status: 'completed',
      total: 4,
      done: 4,
      failed: 0,
      retrying: 0,
      pending: 0,
      creditsUsed: 8,
      unknownCostCalls: 0,
      calls: 4,
      ratePerSec: 1,
      etaSec: 0,
      elapsedMs: 1000,
      media: summary,
    };
    expect(formatProgressLine(progress)).toContain(', media saved 9/12,');
    expect(formatSummary(progress, '/d/harvest.db', NOW)).toContain(
      '  media   saved 9/12 (pending 2, failed 1), oldest pending due in 42 s',
    );
    // Media that was not saved makes a followed run exit 1.
    expect(exitCodeFor(progress)).toBe(1);
    expect(
      exitCodeFor({ ...progress, media: { ...summary, saved: 12, pending: 0, failed: 0 } }),
    ).toBe(0);
    const { media: _, ...noMedia } = progress;
    expect(exitCodeFor(noMedia)).toBe(0);
  });

  it('lists counts by kind and status, re-issues, files and failures', () => {
    const counts: MediaCounts = {
      byKind: {
        screenshot: { ...zero, saved: 3 },
        audio: { ...zero, saved: 2, failed: 1 },
      },
      total: { ...zero, saved: 5, failed: 1 },
      reissuedItems: 2,
      reissues: 3,
      reissueCalls: 2,
      reissueCredits: 4,
      reissueUnknownCalls: 0,
      files: 4,
      bytesStored: 3 * 1024 * 1024,
      failures: [
        {
          status: 'failed',
          code: 'SignatureDoesNotMatch',
          count: 1,
          message: 'media host answered 403 ...',
        },
      ],
    };
    expect(formatMediaCounts(counts, 'r1', '/data')).toBe(
      [
        'media of run r1',
        '  kind        pending  saved  failed  expired',
        '  screenshot        0      3       0        0',
        '  audio             0      2       1        0',
        '  total             0      5       1        0',
        '  re-issued 2 items (3 fresh URLs) with 2 calls, 4 credits',
        '  stored    4 files, 3.0 MiB under /data',
        '  failed    SignatureDoesNotMatch 1: media host answered 403 ...',
      ].join('\n'),
    );
    expect(formatMediaCounts({ ...counts, byKind: {} }, undefined, '/data')).toBe(
      'media of every run: none requested',
    );
    expect(formatBytes(999)).toBe('999 B');
    expect(formatBytes(2048)).toBe('2.0 KiB');
  });
});
