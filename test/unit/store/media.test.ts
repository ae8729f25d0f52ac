import Sqlite from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { callEvent, resultsEvent, seedRun, useTempStores, webItem } from './helpers.ts';

const T0 = Date.UTC(2026, 10, 22, 10, 15, 0);
const FETCHED = T0 + 1000;
const HOUR = 3_600_000;

function signed(name: string, expiresS = 3600): string {
  return `https://media.example/${name}?X-Goog-Date=20261122T101500Z&X-Goog-Expires=${expiresS}&X-Goog-Signature=ab`;
}

function mediaItem(n: number, over: Record<string, unknown> = {}) {
  return webItem(n, {
    screenshot: signed(`s${n}.png`, 86_400),
    audio: signed(`a${n}.mp3`),
    video: signed(`v${n}.mp4`),
    ...over,
  });
}

describe('media table', () => {
  const stores = useTempStores();

  function setup(kinds = ['screenshot', 'audio'] as const) {
    const store = stores.open({ now: () => T0 + 5000 });
    const { runId } = seedRun(store);
    store.media.configure({
      runId,
      kinds: [...kinds],
      dir: 'media',
      maxBytes: 1000,
      marginMaxMs: 300_000,
    });
    return { store, runId };
  }

  it('turns the wanted media of stored results into pending rows, in the same transaction', () => {
    const { store, runId } = setup();
    const report = store.applyEvents([
      resultsEvent(runId, 't0', [mediaItem(1), mediaItem(2, { audio: null })], {
        fetchedAt: FETCHED,
      }),
    ]);
    expect(report.mediaRequested).toBe(3);
    const rows = store.media.pendingOfTask(runId, 't0');
    expect(rows.map((r) => [r.position, r.kind, r.status])).toEqual([
      [0, 'screenshot', 'pending'],
      [0, 'audio', 'pending'],
      [1, 'screenshot', 'pending'],
    ]);
    expect(rows[1]).toMatchObject({
      resultUrl: 'https://example.com/page-1',
      sourceUrl: signed('a1.mp3'),
      issuedAt: T0,
      expiresAt: T0 + HOUR,
      deadlineAt: T0 + HOUR - 300_000,
      reissues: 0,
      queuedAt: null,
    });
    expect(store.mediaSummary(runId)).toEqual({
      requested: 3,
      saved: 0,
      pending: 3,
      failed: 0,
      expired: 0,
      oldestPendingDeadlineAt: T0 + HOUR - 300_000,
    });
    // Redelivered: nothing doubles.
    store.applyEvents([
      resultsEvent(runId, 't0', [mediaItem(1), mediaItem(2, { audio: null })], {
        fetchedAt: FETCHED,
      }),
    ]);
    expect(store.mediaSummary(runId)?.requested).toBe(3);
  });

  it('writes no rows for runs without media settings, images, or kinds not asked for', () => {
    const store = stores.open({ now: () => T0 });
    const { runId } = seedRun(store);
    expect(store.applyEvents([resultsEvent(runId, 't0', [mediaItem(1)])]).mediaRequested).toBe(0);
    expect(store.mediaSummary(runId)).toBeUndefined();
    const other = setup(['video'] as never);
    const e = resultsEvent(other.runId, 't0', [mediaItem(1)]);
    e.items.push({ source: 'images', position: 0, item: { url: 'x', imageUrl: 'y' } });
    expect(other.store.applyEvents([e]).mediaRequested).toBe(1);
  });

  it('queues earliest deadline first; a row moves once from pending', () => {
    const { store, runId } = setup();
    store.applyEvents([resultsEvent(runId, 't0', [mediaItem(1)], { fetchedAt: FETCHED })]);
    const [first, second] = store.media.unqueued(10);
    expect(store.media.get(first!.id)?.kind).toBe('audio');
    expect(store.media.get(second!.id)?.kind).toBe('screenshot');
    store.media.markQueued([first!.id], T0 + 6000);
    expect(store.media.unqueued(10).map((r) => r.id)).toEqual([second!.id]);
    expect(store.media.unqueuePending('other-run')).toBe(0);
    expect(store.media.unqueuePending(runId)).toBe(1);
    expect(store.media.dirs()).toEqual(['media']);
    expect(store.media.unqueued(10)).toHaveLength(2);

    const file = {
      sha256: 'a'.repeat(64),
      path: 'media/aa/x.mp3',
      bytes: 10,
      contentType: 'audio/mpeg',
    };
    // A file from a URL the row no longer points at is not its file, unless it came from the
    // same result (a re-issue for another row of the task gave this one a fresh URL meanwhile).
    const resultUrl = store.media.get(first!.id)!.resultUrl;
    expect(resultUrl).not.toBeNull();
    expect(
      store.media.markSaved(first!.id, {
        ...file,
        sourceUrl: 'https://media.example/old',
        resultUrl: 'https://another.example/result',
      }),
    ).toBe(false);
    expect(
      store.media.markSaved(first!.id, { ...file, sourceUrl: 'https://media.example/old' }),
    ).toBe(false);
    expect(
      store.media.markSaved(first!.id, {
        ...file,
        sourceUrl: 'https://media.example/old',
        resultUrl,
      }),
    ).toBe(true);
    expect(store.media.markSaved(first!.id, file)).toBe(false);
    expect(store.media.markEnded(first!.id, 'failed', 'X', 'late')).toBe(false);
    expect(store.media.get(first!.id)).toMatchObject({
      status: 'saved',
      attempts: 1,
      savedAt: T0 + 5000,
      ...file,
    });
    expect(
      store.media.markEnded(second!.id, 'expired', 'REISSUE_LIMIT', 'no more fresh URLs'),
    ).toBe(true);
    expect(store.mediaSummary(runId)).toMatchObject({
      requested: 2,
      saved: 1,
      pending: 0,
      expired: 1,
      oldestPendingDeadlineAt: null,
    });
    expect(store.media.unqueued(10)).toEqual([]);
  });

  it('keeps no index a saved row pays for and no query reads; the soonest deadline comes from pending rows alone', () => {
    const { store, runId } = setup();
    store.applyEvents([resultsEvent(runId, 't0', [mediaItem(1)], { fetchedAt: FETCHED })]);
    const [first, second] = store.media.unqueued(10);
    expect(store.media.nextDeadline()).toBe(first!.deadlineAt);
    store.media.markSaved(first!.id, {
      sha256: 'b'.repeat(64),
      path: 'media/bb/x.mp3',
      bytes: 10,
      contentType: 'audio/mpeg',
    });
    expect(store.media.nextDeadline()).toBe(second!.deadlineAt);
    store.media.markEnded(second!.id, 'failed', 'X', 'refused');
    expect(store.media.nextDeadline()).toBeNull();

    const db = new Sqlite(store.path, { readonly: true });
    try {
      const indexes = db
        .prepare<[], string>(
          "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'media' AND sql IS NOT NULL",
        )
        .pluck()
        .all();
      expect(indexes).not.toContain('media_sha256');
      expect(indexes).not.toContain('media_status_deadline');
      const plan = db
        .prepare<[], { detail: string }>(
          "EXPLAIN QUERY PLAN SELECT MIN(deadline_at) FROM media WHERE status = 'pending'",
        )
        .all()
        .map((r) => r.detail);
      expect(plan.join(' | ')).toContain('media_pending_deadline');
    } finally {
      db.close();
    }
  });

  it('lists failures by status and code, each with its count and its latest reason', () => {
    const { store, runId } = setup();
    store.applyEvents([
      resultsEvent(runId, 't0', [mediaItem(1), mediaItem(2)], { fetchedAt: FETCHED }),
    ]);
    const ids = store.media.ofRun(runId).map((r) => r.id);
    expect(ids).toHaveLength(4);
    // Ended out of order: the latest reason is the one with the latest time, not the last row.
    store.media.markEnded(ids[0]!, 'failed', 'MEDIA_HTTP_404', 'older', { at: T0 + 7000 });
    store.media.markEnded(ids[1]!, 'failed', 'MEDIA_HTTP_404', 'latest', { at: T0 + 9000 });
    store.media.markEnded(ids[2]!, 'failed', 'MEDIA_HTTP_404', 'middle', { at: T0 + 8000 });
    store.media.markEnded(ids[3]!, 'expired', 'REISSUE_LIMIT', 'no more fresh URLs', {
      at: T0 + 7500,
    });
    for (const run of [runId, undefined] as const) {
      expect(store.mediaCounts(run).failures).toEqual([
        { status: 'failed', code: 'MEDIA_HTTP_404', count: 3, message: 'latest' },
        { status: 'expired', code: 'REISSUE_LIMIT', count: 1, message: 'no more fresh URLs' },
      ]);
    }
  });

  it('`media retry` queues failed and expired rows again, attempts afresh; a kept URL is tried while it lasts', () => {
    const { store, runId } = setup();
    store.applyEvents([resultsEvent(runId, 't0', [mediaItem(1)], { fetchedAt: FETCHED })]);
    const [shot, audio] = store.media.pendingOfTask(runId, 't0');
    store.media.markQueued([shot!.id, audio!.id], T0);
    store.media.markEnded(shot!.id, 'failed', 'MEDIA_TRANSIENT', 'cut off', { attempted: true });
    store.media.markEnded(audio!.id, 'expired', 'REISSUE_LIMIT', 'no more fresh URLs');
    expect(store.media.ended({ runId }).map((r) => [r.kind, r.status])).toEqual([
      ['screenshot', 'failed'],
      ['audio', 'expired'],
    ]);
    expect(store.media.ended({ runId, kind: 'audio' }).map((r) => r.id)).toEqual([audio!.id]);

    // Past the screenshot's deadline, before its expiry: its deadline becomes the expiry.
    const at = shot!.deadlineAt + 1000;
    expect(store.media.requeue([shot!.id, audio!.id], true, at)).toBe(2);
    expect(store.media.get(shot!.id)).toMatchObject({
      status: 'pending',
      attempts: 0,
      errorCode: null,
      queuedAt: null,
      deadlineAt: shot!.expiresAt,
    });
    // Past its expiry: the deadline stays, and the media role re-issues it.
    expect(store.media.get(audio!.id)).toMatchObject({
      status: 'pending',
      deadlineAt: audio!.deadlineAt,
    });
    expect(store.media.get(shot!.id)!.updatedAt).toBeGreaterThan(shot!.updatedAt);
    expect(
      store.media
        .unqueued(10)
        .map((r) => r.id)
        .sort(),
    ).toEqual([shot!.id, audio!.id].sort());
    // Pending rows are left alone.
    expect(store.media.requeue([shot!.id], true, at)).toBe(0);
  });

  it('marks a batch of rows queued in one go, pending rows only', () => {
    const { store, runId } = setup();
    store.applyEvents([
      resultsEvent(runId, 't0', [mediaItem(1), mediaItem(2)], { fetchedAt: FETCHED }),
    ]);
    const ids = store.media.unqueued(10).map((r) => r.id);
    expect(ids).toHaveLength(4);
    const file = { sha256: 'b'.repeat(64), path: 'media/bb/x.png', bytes: 1, contentType: 'x' };
    expect(store.media.markSaved(ids[0]!, file)).toBe(true);
    store.media.markQueued([], T0 + 6000);
    store.media.markQueued(ids, T0 + 7000);
    expect(store.media.unqueued(10)).toEqual([]);
    expect(ids.map((id) => store.media.get(id)?.queuedAt)).toEqual([
      null,
      T0 + 7000,
      T0 + 7000,
      T0 + 7000,
    ]);
  });

  it('a re-issue refreshes the URL and counts; a newer response refreshes pending rows and resets a replaced result', () => {
    const { store, runId } = setup();
    store.applyEvents([
      resultsEvent(runId, 't0', [mediaItem(1), mediaItem(2)], { fetchedAt: FETCHED }),
    ]);
    const [s1, a1, s2] = store.media.pendingOfTask(runId, 't0');
    const fresh = {
      sourceUrl: 'https://media.example/new',
      issuedAt: T0 + 9,
      expiresAt: T0 + 99,
      deadlineAt: T0 + 90,
    };
    expect(store.media.refresh(a1!.id, fresh, true)).toBe(true);
    expect(store.media.refresh(s1!.id, fresh, false)).toBe(true);
    expect(store.media.get(a1!.id)).toMatchObject({ ...fresh, reissues: 1 });
    expect(store.media.get(s1!.id)?.reissues).toBe(0);
    store.media.markSaved(s2!.id, {
      sha256: 'b'.repeat(64),
      path: 'p',
      bytes: 1,
      contentType: 'image/png',
    });

    // The search ran again (a retried job): position 1 now holds another result.
    store.applyEvents([
      resultsEvent(runId, 't0', [mediaItem(1), mediaItem(3)], { fetchedAt: FETCHED + HOUR }),
    ]);
    const rows = store.media.pendingOfTask(runId, 't0');
    expect(rows.map((r) => [r.position, r.kind, r.resultUrl])).toEqual([
      [0, 'screenshot', 'https://example.com/page-1'],
      [0, 'audio', 'https://example.com/page-1'],
      [1, 'screenshot', 'https://example.com/page-3'],
      [1, 'audio', 'https://example.com/page-3'],
    ]);
    // The re-issued URL is newer than the one in that response (signed earlier): it stays.
    expect(store.media.get(a1!.id)).toMatchObject({ sourceUrl: fresh.sourceUrl, reissues: 1 });
    expect(store.media.get(s2!.id)).toMatchObject({ status: 'pending', sha256: null, reissues: 0 });
    // An older response arriving late changes nothing.
    store.applyEvents([resultsEvent(runId, 't0', [mediaItem(9)], { fetchedAt: FETCHED - 10 })]);
    expect(store.media.get(s1!.id)?.resultUrl).toBe('https://example.com/page-1');
  });

  it('counts by kind and status, re-issue calls and credits, distinct files', () => {
    const { store, runId } = setup(['screenshot', 'audio', 'video'] as never);
    store.applyEvents([
      resultsEvent(runId, 't0', [mediaItem(1), mediaItem(2)], { fetchedAt: FETCHED }),
      callEvent(runId, 't0', { purpose: 'media-reissue', creditsUsed: 3 }),
      callEvent(runId, 't0', { creditsUsed: 5 }),
    ]);
    const rows = store.media.pendingOfTask(runId, 't0');
    const png = {
      sha256: 'c'.repeat(64),
      path: 'media/cc/c.png',
      bytes: 7,
      contentType: 'image/png',
    };
    store.media.markSaved(rows[0]!.id, png);
    store.media.markSaved(rows[3]!.id, png);
    store.media.refresh(
      rows[1]!.id,
      { sourceUrl: 'u', issuedAt: 1, expiresAt: 2, deadlineAt: 1 },
      true,
    );
    store.media.markEnded(
      rows[1]!.id,
      'failed',
      'MEDIA_URL_REFUSED',
      'media host answered 403 SignatureDoesNotMatch',
    );
    store.media.markEnded(
      rows[2]!.id,
      'failed',
      'MEDIA_URL_REFUSED',
      'media host answered 403 SignatureDoesNotMatch: later',
    );
    const counts = store.mediaCounts(runId);
    expect(counts.byKind).toEqual({
      screenshot: { pending: 0, saved: 2, failed: 0, expired: 0 },
      audio: { pending: 1, saved: 0, failed: 1, expired: 0 },
      video: { pending: 1, saved: 0, failed: 1, expired: 0 },
    });
    expect(counts).toMatchObject({
      total: { pending: 2, saved: 2, failed: 2, expired: 0 },
      reissuedItems: 1,
      reissues: 1,
      reissueCalls: 1,
      reissueCredits: 3,
      files: 1,
      bytesStored: 7,
    });
    expect(counts.failures).toEqual([
      {
        status: 'failed',
        code: 'MEDIA_URL_REFUSED',
        count: 2,
        message: expect.stringContaining('SignatureDoesNotMatch'),
      },
    ]);
    expect(store.savedFiles(runId)).toEqual(
      [{ ...png, contentType: undefined, rows: 2 }].map(({ contentType: _, ...f }) => f),
    );
    expect(store.mediaCounts().total.saved).toBe(2);
  });

  it('media events move rows once, through applyEvents, and are validated', () => {
    const { store, runId } = setup();
    store.applyEvents([resultsEvent(runId, 't0', [mediaItem(1)], { fetchedAt: FETCHED })]);
    const [shot, audio] = store.media.pendingOfTask(runId, 't0');
    const at = T0 + 7000;
    const events = [
      { type: 'media-retry', mediaId: audio!.id, at },
      {
        type: 'media-refreshed',
        mediaId: audio!.id,
        sourceUrl: 'https://media.example/fresh',
        issuedAt: at,
        expiresAt: at + 10,
        deadlineAt: at + 9,
        countReissue: true,
        at,
      },
      {
        type: 'media-saved',
        mediaId: shot!.id,
        sourceUrl: shot!.sourceUrl,
        resultUrl: shot!.resultUrl,
        sha256: 'd'.repeat(64),
        path: 'media/dd/d.png',
        bytes: 3,
        contentType: 'image/png',
        at,
      },
      {
        type: 'media-ended',
        mediaId: audio!.id,
        status: 'expired',
        code: 'ExpiredToken',
        message: 'gone',
        attempted: true,
        at,
      },
      {
        type: 'media-saved',
        mediaId: shot!.id,
        sourceUrl: shot!.sourceUrl,
        resultUrl: shot!.resultUrl,
        sha256: 'not a hash',
        path: 'x',
        bytes: 1,
        contentType: 'x',
        at,
      },
    ];
    const report = store.applyEvents(events);
    expect(report.mediaUpdates).toBe(4);
    expect(report.rejected.map((r) => r.index)).toEqual([4]);
    expect(store.media.get(audio!.id)).toMatchObject({
      status: 'expired',
      attempts: 2,
      reissues: 1,
      sourceUrl: 'https://media.example/fresh',
      errorCode: 'ExpiredToken',
      updatedAt: at,
    });
    expect(store.media.get(shot!.id)).toMatchObject({ status: 'saved', savedAt: at, attempts: 1 });
    // Delivered again: the rows have ended, nothing moves.
    expect(store.applyEvents(events.slice(0, 4)).mediaUpdates).toBe(0);
  });
});
