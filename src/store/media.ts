/**
 * `media` and `run_media`: the files behind results' signed URLs. A run that saves media has a
 * `run_media` row (what to save, where, how large) written with the run; each media URL of a
 * stored result becomes a `pending` row in the same transaction as the result, so no media
 * request is lost between storing a result and queueing its download. A row then moves once:
 * to `saved` (file on disk, hash recorded), `failed` or `expired` (with a code and a reason).
 *
 * Rows are keyed by result and kind: (run, task, source, position, kind, item index).
 *
 * Over 300 lines on purpose: one table's documented interface, its SQL and the small methods
 * that run it, which read together (each statement's guard is what its method promises).
 */
import type { Database } from 'better-sqlite3';
import type { ResultsEvent } from '../events/store.ts';
import { mediaOfItem } from '../media/collect.ts';
import { mediaDeadline } from '../media/expiry.ts';
import type { MediaKind } from '../media/kinds.ts';
import { clip } from './calls.ts';
import type { Clock } from './clock.ts';

export const MEDIA_STATUSES = ['pending', 'saved', 'failed', 'expired'] as const;
export type MediaStatus = (typeof MEDIA_STATUSES)[number];

/** What a run saves of its media. */
export interface MediaConfig {
  runId: string;
  /** Kinds saved; media of other kinds is left as a URL. */
  kinds: MediaKind[];
  /** Folder for files, relative to the data directory. */
  dir: string;
  /** Largest file saved, in bytes. */
  maxBytes: number;
  /** Largest safety margin before a URL's expiry, in ms (expiry.ts). */
  marginMaxMs: number;
}

export interface MediaRow {
  id: number;
  runId: string;
  taskKey: string;
  source: string;
  position: number;
  kind: MediaKind;
  itemIndex: number;
  status: MediaStatus;
  sourceUrl: string;
  /** `url` of the result the media belongs to (re-issues match on it). */
  resultUrl: string | null;
  /** When the URL was issued, ms since the epoch. */
  issuedAt: number;
  /** When the URL stops working, ms since the epoch. */
  expiresAt: number | null;
  /** When its download must have started (expiry less a safety margin), ms since the epoch. */
  deadlineAt: number;
  /** Downloads started. */
  attempts: number;
  /** Fresh URLs fetched for it by re-issuing its search. */
  reissues: number;
  sha256: string | null;
  /** Relative to the data directory. */
  path: string | null;
  bytes: number | null;
  contentType: string | null;
  savedAt: number | null;
  errorCode: string | null;
  errorMessage: string | null;
  updatedAt: number;
  /** When the row was handed to the media queue; null while it has no job. */
  queuedAt: number | null;
}

/** A pending row without a job (`MediaTable.unqueued`). */
export interface UnqueuedRow {
  id: number;
  deadlineAt: number;
  /**
   * When the row last changed. A row an answer made pending again always gets a later one, so
   * its job's id (src/queue/names.ts `mediaJobId`) is not that of a job still in Redis.
   */
  updatedAt: number;
}

export interface SavedFile {
  sha256: string;
  path: string;
  bytes: number;
  contentType: string;
  /**
   * The URL the file was downloaded from, and the result it belonged to then: the row is saved
   * only while it still points at that URL, or at a fresh URL of that same result (a re-issue
   * for another row of its task refreshes it too). A newer answer that put another result at
   * its position makes the file not its file.
   */
  sourceUrl?: string;
  resultUrl?: string | null;
}

export interface FreshUrl {
  sourceUrl: string;
  issuedAt: number;
  expiresAt: number;
  deadlineAt: number;
}

/** A failed or expired row `harvest media retry` may queue again. */
export interface EndedRow {
  id: number;
  status: 'failed' | 'expired';
  kind: MediaKind;
  expiresAt: number | null;
}

export interface MediaTable {
  /** Records what a run saves; called once, before any of its results is stored. */
  configure(config: MediaConfig): void;
  config(runId: string): MediaConfig | undefined;
  /**
   * Pending rows for the media of a stored response (part of applying a results event). A
   * newer response refreshes the URL of a row still pending, and resets a row whose position
   * now holds another result. Returns rows written.
   */
  requestFromResults(event: ResultsEvent): number;
  get(id: number): MediaRow | undefined;
  /** Pending rows without a job, earliest deadline first. */
  unqueued(limit: number): UnqueuedRow[];
  /** Pending rows among `ids` now have a job. Returns rows marked. */
  markQueued(ids: readonly number[], at: number): number;
  /**
   * Forgets which pending rows (of one run, or all) have jobs, so they are queued again (job ids
   * come from row ids: a job still in Redis is not doubled). Returns rows affected.
   */
  unqueuePending(runId?: string): number;
  /** The media folders of every run that saves media. */
  dirs(): string[];
  /** The deadline of the pending row due first (any run), ms since the epoch; null when none. */
  nextDeadline(): number | null;
  /** A download failed and will be tried again: one more attempt. */
  retried(id: number, at?: number): boolean;
  /**
   * Pending -> saved (one more attempt). False when the row was not pending, or no longer
   * points at `file.sourceUrl`.
   */
  markSaved(id: number, file: SavedFile, at?: number): boolean;
  /**
   * Pending -> failed or expired, with a code and the reason; `attempted` when a download ended
   * it (one more attempt). False when not pending.
   */
  markEnded(
    id: number,
    status: 'failed' | 'expired',
    code: string,
    message: string,
    options?: { attempted?: boolean; at?: number },
  ): boolean;
  /** A fresh URL for a pending row; `countReissue` adds one to its re-issues. */
  refresh(id: number, fresh: FreshUrl, countReissue: boolean, at?: number): boolean;
  /** Pending rows of a task (a re-issue refreshes them together). */
  pendingOfTask(runId: string, taskKey: string): MediaRow[];
  /** Every row of a run, by task, source, position, kind and item. */
  ofRun(runId: string): MediaRow[];
  /** Failed and expired rows (of one run, or all; of one kind, or all), by id. */
  ended(filter: { runId?: string; kind?: MediaKind }): EndedRow[];
  /**
   * Failed or expired rows among `ids` -> pending again, with no job and their attempts afresh
   * (`harvest media retry`). With `keepUrl`, a row whose deadline has passed gets its URL's
   * expiry as its deadline, so it is downloaded while the URL lasts rather than re-issued.
   * Returns rows moved.
   */
  requeue(ids: readonly number[], keepUrl: boolean, at?: number): number;
}

const COLUMNS = `id, run_id AS runId, task_key AS taskKey, source, position, kind,
  item_index AS itemIndex, status, source_url AS sourceUrl, result_url AS resultUrl,
  issued_at AS issuedAt, expires_at AS expiresAt, deadline_at AS deadlineAt, attempts, reissues,
  sha256, path, bytes, content_type AS contentType, saved_at AS savedAt, error_code AS errorCode,
  error_message AS errorMessage, updated_at AS updatedAt, queued_at AS queuedAt`;

interface ConfigRow {
  kinds: string;
  dir: string;
  maxBytes: number;
  marginMaxMs: number;
}

/** The statements of `run_media`, prepared once per connection. */
function prepareRunMediaStatements(db: Database) {
  return {
    insertConfig: db.prepare<[string, string, string, number, number]>(
      `INSERT INTO run_media (run_id, kinds_json, dir, max_bytes, margin_max_ms) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (run_id) DO UPDATE SET kinds_json = excluded.kinds_json, dir = excluded.dir,
         max_bytes = excluded.max_bytes, margin_max_ms = excluded.margin_max_ms`,
    ),
    selectConfig: db.prepare<[string], ConfigRow>(
      `SELECT kinds_json AS kinds, dir, max_bytes AS maxBytes, margin_max_ms AS marginMaxMs
       FROM run_media WHERE run_id = ?`,
    ),
    dirs: db.prepare<[], string>('SELECT DISTINCT dir FROM run_media ORDER BY dir').pluck(),
  };
}

/** The statements of `media`, prepared once per connection. */
function prepareMediaStatements(db: Database) {
  return {
    upsert: db.prepare<Record<string, string | number | null>>(
      `INSERT INTO media (run_id, task_key, source, position, kind, item_index, status, source_url,
         result_url, issued_at, expires_at, deadline_at, updated_at)
       VALUES (@runId, @taskKey, @source, @position, @kind, @itemIndex, 'pending', @sourceUrl,
         @resultUrl, @issuedAt, @expiresAt, @deadlineAt, @at)
       ON CONFLICT (run_id, task_key, source, position, kind, item_index) DO UPDATE SET
         status = 'pending', source_url = excluded.source_url, result_url = excluded.result_url,
         issued_at = excluded.issued_at, expires_at = excluded.expires_at,
         deadline_at = excluded.deadline_at,
         updated_at = MAX(excluded.updated_at, media.updated_at + 1),
         queued_at = CASE WHEN media.status = 'pending' THEN media.queued_at END,
         reissues = CASE WHEN media.status = 'pending' THEN media.reissues ELSE 0 END,
         attempts = CASE WHEN media.status = 'pending' THEN media.attempts ELSE 0 END,
         sha256 = NULL, path = NULL, bytes = NULL, content_type = NULL, saved_at = NULL,
         error_code = NULL, error_message = NULL
       WHERE excluded.issued_at >= media.issued_at
         AND (media.status = 'pending' OR media.result_url IS NOT excluded.result_url)`,
    ),
    byId: db.prepare<[number], MediaRow>(`SELECT ${COLUMNS} FROM media WHERE id = ?`),
    // Polled every 50 ms: on the partial index of exactly these rows, which the planner would
    // leave for an index of every pending row (media_pending_deadline: queued ones included, all
    // read to find none).
    unqueued: db.prepare<[number], UnqueuedRow>(
      `SELECT id, deadline_at AS deadlineAt, updated_at AS updatedAt
       FROM media INDEXED BY media_unqueued
       WHERE status = 'pending' AND queued_at IS NULL ORDER BY deadline_at LIMIT ?`,
    ),
    // One statement for a whole batch of ids (a JSON array), not one per row. `+status` keeps
    // the planner on the ids (rowid lookups) rather than a walk of every pending row.
    markQueued: db.prepare<[number, string]>(
      `UPDATE media SET queued_at = ?
       WHERE id IN (SELECT value FROM json_each(?)) AND +status = 'pending'`,
    ),
    unqueue: db.prepare<{ run: string | null }>(
      `UPDATE media SET queued_at = NULL
       WHERE status = 'pending' AND queued_at IS NOT NULL AND (@run IS NULL OR run_id = @run)`,
    ),
    nextDeadline: db
      .prepare<[], number | null>(`SELECT MIN(deadline_at) FROM media WHERE status = 'pending'`)
      .pluck(),
    retried: db.prepare<[number, number]>(
      `UPDATE media SET attempts = attempts + 1, updated_at = ? WHERE id = ? AND status = 'pending'`,
    ),
    saved: db.prepare<Record<string, string | number | null>>(
      `UPDATE media SET status = 'saved', sha256 = @sha256, path = @path, bytes = @bytes,
         content_type = @contentType, saved_at = @at, updated_at = @at, error_code = NULL,
         error_message = NULL, attempts = attempts + 1
       WHERE id = @id AND status = 'pending'
         AND (@sourceUrl IS NULL OR source_url = @sourceUrl
              OR (@resultUrl IS NOT NULL AND result_url = @resultUrl))`,
    ),
    ended: db.prepare<[string, string, string | null, number, number, number]>(
      `UPDATE media SET status = ?, error_code = ?, error_message = ?, attempts = attempts + ?,
         updated_at = ?
       WHERE id = ? AND status = 'pending'`,
    ),
    refresh: db.prepare<Record<string, string | number>>(
      `UPDATE media SET source_url = @sourceUrl, issued_at = @issuedAt, expires_at = @expiresAt,
         deadline_at = @deadlineAt, reissues = reissues + @count, updated_at = @at
       WHERE id = @id AND status = 'pending'`,
    ),
    endedRows: db.prepare<{ run: string | null; kind: string | null }, EndedRow>(
      `SELECT id, status, kind, expires_at AS expiresAt FROM media
       WHERE status IN ('failed', 'expired') AND (@run IS NULL OR run_id = @run)
         AND (@kind IS NULL OR kind = @kind)
       ORDER BY id`,
    ),
    requeue: db.prepare<{ id: number; keepUrl: number; at: number }>(
      `UPDATE media SET status = 'pending', attempts = 0, error_code = NULL, error_message = NULL,
         queued_at = NULL, updated_at = MAX(@at, updated_at + 1),
         deadline_at = CASE WHEN @keepUrl = 1 AND deadline_at < @at AND expires_at > @at
           THEN expires_at ELSE deadline_at END
       WHERE id = @id AND status IN ('failed', 'expired')`,
    ),
    ofRun: db.prepare<[string], MediaRow>(
      `SELECT ${COLUMNS} FROM media WHERE run_id = ?
       ORDER BY task_key, source, position, kind, item_index`,
    ),
    pendingOfTask: db.prepare<[string, string], MediaRow>(
      `SELECT ${COLUMNS} FROM media WHERE run_id = ? AND task_key = ? AND status = 'pending'
       ORDER BY id`,
    ),
  };
}

type RunMediaStatements = ReturnType<typeof prepareRunMediaStatements>;
type MediaStatements = ReturnType<typeof prepareMediaStatements>;

/** Runs' media settings, read once each: a run's settings never change once its results arrive. */
function createConfigCache(select: RunMediaStatements['selectConfig']) {
  const configs = new Map<string, MediaConfig | null>();
  return {
    get(runId: string): MediaConfig | undefined {
      let cached = configs.get(runId);
      if (cached === undefined) {
        const row = select.get(runId);
        cached = row
          ? {
              runId,
              kinds: JSON.parse(row.kinds) as MediaKind[],
              dir: row.dir,
              maxBytes: row.maxBytes,
              marginMaxMs: row.marginMaxMs,
            }
          : null;
        configs.set(runId, cached);
      }
      return cached ?? undefined;
    },
    forget(runId: string): void {
      configs.delete(runId);
    },
  };
}

/** Upserts a pending row for each wanted media URL of the event's items; returns rows written. */
function requestMedia(
  upsert: MediaStatements['upsert'],
  c: MediaConfig,
  e: ResultsEvent,
  at: number,
): number {
  const wanted = new Set(c.kinds);
  let written = 0;
  for (const { source, position, item } of e.items) {
    if (source === 'images') continue;
    const resultUrl = typeof item.url === 'string' ? item.url : null;
    for (const m of mediaOfItem(item, wanted)) {
      const d = mediaDeadline({
        url: m.url,
        kind: m.kind,
        receivedAt: e.fetchedAt,
        marginMaxMs: c.marginMaxMs,
      });
      const info = upsert.run({
        runId: e.runId,
        taskKey: e.taskKey,
        source,
        position,
        kind: m.kind,
        itemIndex: m.itemIndex,
        sourceUrl: m.url,
        resultUrl,
        issuedAt: d.issuedAt,
        expiresAt: d.expiresAt,
        deadlineAt: d.deadlineAt,
        at,
      });
      written += info.changes;
    }
  }
  return written;
}

export function createMediaTable(db: Database, now: Clock): MediaTable {
  const runMedia = prepareRunMediaStatements(db);
  const s = prepareMediaStatements(db);
  const configs = createConfigCache(runMedia.selectConfig);
  return {
    configure(c) {
      runMedia.insertConfig.run(c.runId, JSON.stringify(c.kinds), c.dir, c.maxBytes, c.marginMaxMs);
      configs.forget(c.runId);
    },
    config: (runId) => configs.get(runId),
    requestFromResults(e) {
      const c = configs.get(e.runId);
      if (!c || c.kinds.length === 0) return 0;
      return requestMedia(s.upsert, c, e, now());
    },
    get: (id) => s.byId.get(id),
    unqueued: (limit) => s.unqueued.all(limit),
    markQueued: (ids, at) =>
      ids.length > 0 ? s.markQueued.run(at, JSON.stringify(ids)).changes : 0,
    unqueuePending: (runId) => s.unqueue.run({ run: runId ?? null }).changes,
    dirs: () => runMedia.dirs.all(),
    nextDeadline: () => s.nextDeadline.get() ?? null,
    retried: (id, at = now()) => s.retried.run(at, id).changes > 0,
    markSaved: (id, f, at = now()) =>
      s.saved.run({
        id,
        sha256: f.sha256,
        path: f.path,
        bytes: f.bytes,
        contentType: f.contentType,
        sourceUrl: f.sourceUrl ?? null,
        resultUrl: f.resultUrl ?? null,
        at,
      }).changes > 0,
    markEnded: (id, status, code, message, options = {}) =>
      s.ended.run(status, code, clip(message), options.attempted ? 1 : 0, options.at ?? now(), id)
        .changes > 0,
    refresh: (id, fresh, countReissue, at = now()) =>
      s.refresh.run({ id, ...fresh, count: countReissue ? 1 : 0, at }).changes > 0,
    pendingOfTask: (runId, taskKey) => s.pendingOfTask.all(runId, taskKey),
    ofRun: (runId) => s.ofRun.all(runId),
    ended: (filter) => s.endedRows.all({ run: filter.runId ?? null, kind: filter.kind ?? null }),
    requeue: db.transaction((ids: readonly number[], keepUrl: boolean, at: number = now()) => {
      let moved = 0;
      for (const id of ids) moved += s.requeue.run({ id, keepUrl: keepUrl ? 1 : 0, at }).changes;
      return moved;
    }),
  };
}
