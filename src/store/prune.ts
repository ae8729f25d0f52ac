/**
 * The SQL of `harvest prune` and of pipelines' `retention`: what a run holds, and moving a run's
 * calls and results out in small transactions, each of which first adds their cost figures to
 * pruned_costs (./queries/pruned-costs.ts), so a cost report reads the same before, during and
 * after. Runs, tasks, run counts, estimates, seen URLs, ticks and notifications are kept.
 *
 * Each batch is one immediate transaction over a few hundred tasks of one run, and checks again
 * that the run is finished and saves no more media: a run resumed meanwhile is left alone.
 */
import type { Database } from 'better-sqlite3';
import { CONTENT_COLUMNS, type DeletedContents, deleteUnreferencedContents } from './contents.ts';
import { moveCallCostsSql, moveResultCostsSql } from './queries/pruned-costs.ts';
import { FINISHED_RUN_STATUSES } from './runs.ts';

export interface PipelineRunRow {
  runId: string;
  status: string;
  /** ms since the epoch. */
  createdAt: number;
}

/** What a run holds that prune removes. */
export interface RunFootprint {
  runId: string;
  calls: number;
  /** Known credits of its calls (kept, summed, in pruned_costs). */
  creditsUsed: number;
  results: number;
  media: number;
  /** Media rows still waiting for their download: the run is not done with. */
  pendingMedia: number;
}

/** A saved media file a run's rows point at (path relative to the data directory). */
export interface MediaFileRef {
  path: string;
  bytes: number;
}

export interface MovedBatch {
  /** The last task key covered; the next batch starts after it. */
  lastKey: string | null;
  calls: number;
  results: number;
  media: number;
  /** No more tasks after this batch: the run is done. */
  done: boolean;
}

/** A finished scheduled run whose pipeline's retention is still to be applied. */
export interface RetentionDue {
  runId: string;
  pipelineName: string;
  keepRuns: number | null;
  maxAgeMs: number | null;
}

export interface PruneTable {
  /** Records that `runId`'s pipeline keeps this, to apply once the run has finished. */
  ensureRetention(due: RetentionDue, at: number): void;
  /** Retentions of finished runs not yet applied, oldest run first. */
  dueRetentions(limit: number): RetentionDue[];
  /** Marks a run's retention applied, with what it did (or why it failed). */
  retentionApplied(runId: string, outcome: string, at: number): void;
  /** Runs of a pipeline, newest first. */
  runsOf(pipelineName: string): PipelineRunRow[];
  footprint(runId: string): RunFootprint;
  /** Distinct saved files of the runs, with their sizes. */
  mediaFilesOf(runIds: readonly string[]): MediaFileRef[];
  /** Of `paths`, those a media row of a run not in `except` points at. */
  referencedPaths(paths: readonly string[], except: readonly string[]): Set<string>;
  /**
   * Moves the calls, results and media rows of up to `tasks` tasks after `afterKey` (all keys
   * when null) out of the run. Returns undefined, changing nothing, when the run is not finished
   * or still has media to save.
   */
  moveBatch(runId: string, afterKey: string | null, tasks: number): MovedBatch | undefined;
  /**
   * The stored contents no result row would reference once the runs' results are gone (those
   * no row references now included): what `deleteUnreferencedContent` then removes.
   */
  contentOnlyOf(runIds: readonly string[]): DeletedContents;
  /**
   * Removes the stored contents no result row references, in short transactions; `step` runs
   * each (to time it).
   */
  deleteUnreferencedContent(
    step?: (batch: () => DeletedContents) => DeletedContents,
  ): DeletedContents;
  /**
   * Runs `fn` in an immediate transaction (no other write commits meanwhile): the last check
   * of a file's references and its removal.
   */
  exclusive<T>(fn: () => T): T;
  /** Bytes each table takes with its indexes (SQLite's dbstat), by table name. */
  objectBytes(): Map<string, number>;
  /** Rows of each table, by name. */
  tableRows(tables: readonly string[]): Map<string, number>;
  /** The database's page size, free pages, and its auto_vacuum mode (0 none, 1 full, 2 incremental). */
  pages(): { pageSize: number; freePages: number; pageCount: number; autoVacuum: number };
  /** Gives up to `pages` free pages back to the file system (incremental auto_vacuum only). */
  incrementalVacuum(pages: number): void;
  /** A passive WAL checkpoint: copies what it can into the file without waiting for readers. */
  checkpoint(): void;
}

const FINISHED = FINISHED_RUN_STATUSES.map((s) => `'${s}'`).join(', ');

/** `(task_key > @after OR @after IS NULL) AND task_key <= @upTo (none: no bound)`. */
const RANGE =
  'run_id = @runId AND (@after IS NULL OR task_key > @after) AND (@upTo IS NULL OR task_key <= @upTo)';

export function createPruneTable(db: Database): PruneTable {
  const s = {
    runsOf: db.prepare<[string], PipelineRunRow>(
      `SELECT ru.id AS runId, ru.status, ru.created_at AS createdAt
       FROM runs ru JOIN pipelines p ON p.id = ru.pipeline_id
       WHERE p.name = ? ORDER BY ru.created_at DESC, ru.id DESC`,
    ),
    calls: db.prepare<[string], { n: number; credits: number }>(
      'SELECT COUNT(*) AS n, COALESCE(SUM(credits_used), 0) AS credits FROM calls WHERE run_id = ?',
    ),
    results: db.prepare<[string], number>('SELECT COUNT(*) FROM results WHERE run_id = ?').pluck(),
    media: db.prepare<[string], { n: number; pending: number }>(
      `SELECT COUNT(*) AS n, COALESCE(SUM(status = 'pending'), 0) AS pending
       FROM media WHERE run_id = ?`,
    ),
    files: db.prepare<[string], MediaFileRef>(
      `SELECT path, MAX(COALESCE(bytes, 0)) AS bytes FROM media
       WHERE run_id = ? AND path IS NOT NULL GROUP BY path`,
    ),
    busy: db
      .prepare<{ runId: string }, number>(
        `SELECT (SELECT status NOT IN (${FINISHED}) FROM runs WHERE id = @runId)
           OR EXISTS (SELECT 1 FROM media WHERE run_id = @runId AND status = 'pending')`,
      )
      .pluck(),
    nextKeys: db
      .prepare<{ runId: string; after: string | null; limit: number }, string>(
        `SELECT task_key FROM tasks WHERE run_id = @runId AND (@after IS NULL OR task_key > @after)
         ORDER BY task_key LIMIT @limit`,
      )
      .pluck(),
    moveCalls: db.prepare(moveCallCostsSql(RANGE)),
    moveResults: db.prepare(moveResultCostsSql(RANGE)),
    deleteResults: db.prepare(`DELETE FROM results WHERE ${RANGE}`),
    deleteCalls: db.prepare(`DELETE FROM calls WHERE ${RANGE}`),
    deleteMedia: db.prepare(`DELETE FROM media WHERE ${RANGE}`),
  };

  const retention = {
    ensure: db.prepare(
      `INSERT INTO retention_due (run_id, pipeline_name, keep_runs, max_age_ms, created_at)
       VALUES (@runId, @pipelineName, @keepRuns, @maxAgeMs, @at) ON CONFLICT (run_id) DO NOTHING`,
    ),
    due: db.prepare<[number], RetentionDue>(
      `SELECT d.run_id AS runId, d.pipeline_name AS pipelineName, d.keep_runs AS keepRuns,
         d.max_age_ms AS maxAgeMs
       FROM retention_due d JOIN runs ru ON ru.id = d.run_id
       WHERE d.applied_at IS NULL AND ru.status IN (${FINISHED})
       ORDER BY ru.created_at LIMIT ?`,
    ),
    applied: db.prepare(
      'UPDATE retention_due SET applied_at = ?, outcome = ? WHERE run_id = ? AND applied_at IS NULL',
    ),
  };

  const moveBatch = db.transaction(
    (runId: string, after: string | null, tasks: number): MovedBatch | undefined => {
      if (s.busy.get({ runId }) !== 0) return undefined;
      const keys = s.nextKeys.all({ runId, after, limit: tasks });
      // The last batch has no upper bound: calls and results whose task row is missing go too.
      const done = keys.length < tasks;
      const upTo = done ? null : (keys.at(-1) ?? null);
      const range = { runId, after, upTo };
      s.moveCalls.run(range);
      s.moveResults.run(range);
      const results = s.deleteResults.run(range).changes;
      const calls = s.deleteCalls.run(range).changes;
      const media = s.deleteMedia.run(range).changes;
      return { lastKey: upTo, calls, results, media, done };
    },
  );

  const keptHashes = Object.values(CONTENT_COLUMNS)
    .map(
      (column) =>
        `SELECT ${column} FROM results WHERE ${column} IS NOT NULL
         AND run_id NOT IN (SELECT value FROM json_each(@runIds))`,
    )
    .join(' UNION ');
  // Prepared when first used: content is read only by a prune that reaches some run.
  const contentOnly = () =>
    db.prepare<{ runIds: string }, { rows: number; bytes: number | null }>(
      `SELECT COUNT(*) AS rows, SUM(length(data)) AS bytes FROM contents
       WHERE hash NOT IN (${keptHashes})`,
    );

  return {
    ensureRetention: (due, at) => void retention.ensure.run({ ...due, at }),
    dueRetentions: (limit) => retention.due.all(limit),
    retentionApplied: (runId, outcome, at) => void retention.applied.run(at, outcome, runId),
    runsOf: (name) => s.runsOf.all(name),
    contentOnlyOf(runIds) {
      const found = contentOnly().get({ runIds: JSON.stringify(runIds) });
      return { rows: found?.rows ?? 0, bytes: found?.bytes ?? 0 };
    },
    deleteUnreferencedContent: (step) => deleteUnreferencedContents(db, step),
    footprint(runId) {
      const calls = s.calls.get(runId) ?? { n: 0, credits: 0 };
      const media = s.media.get(runId) ?? { n: 0, pending: 0 };
      return {
        runId,
        calls: calls.n,
        creditsUsed: calls.credits,
        results: s.results.get(runId) ?? 0,
        media: media.n,
        pendingMedia: media.pending,
      };
    },
    mediaFilesOf(runIds) {
      const files = new Map<string, number>();
      for (const runId of runIds) {
        for (const f of s.files.all(runId))
          files.set(f.path, Math.max(files.get(f.path) ?? 0, f.bytes));
      }
      return [...files].map(([path, bytes]) => ({ path, bytes }));
    },
    referencedPaths(paths, except) {
      if (paths.length === 0) return new Set();
      return new Set(
        db
          .prepare<[string, string], string>(
            `SELECT DISTINCT path FROM media
             WHERE path IN (SELECT value FROM json_each(?))
               AND run_id NOT IN (SELECT value FROM json_each(?))`,
          )
          .pluck()
          .all(JSON.stringify(paths), JSON.stringify(except)),
      );
    },
    moveBatch: (runId, afterKey, tasks) => moveBatch.immediate(runId, afterKey, tasks),
    exclusive: (fn) => db.transaction(fn).immediate(),
    objectBytes() {
      const rows = db
        .prepare<[], { name: string; bytes: number }>(
          `SELECT m.tbl_name AS name, SUM(d.bytes) AS bytes
           FROM (SELECT name, SUM(pgsize) AS bytes FROM dbstat GROUP BY name) d
             JOIN sqlite_master m ON m.name = d.name
           GROUP BY m.tbl_name`,
        )
        .all();
      return new Map(rows.map((r) => [r.name, r.bytes]));
    },
    tableRows(tables) {
      const counts = new Map<string, number>();
      for (const t of tables) {
        const exists = db
          .prepare<[string], number>(
            "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?",
          )
          .pluck()
          .get(t);
        if (exists)
          counts.set(t, db.prepare<[], number>(`SELECT COUNT(*) FROM "${t}"`).pluck().get() ?? 0);
      }
      return counts;
    },
    pages: () => ({
      pageSize: db.pragma('page_size', { simple: true }) as number,
      freePages: db.pragma('freelist_count', { simple: true }) as number,
      pageCount: db.pragma('page_count', { simple: true }) as number,
      autoVacuum: db.pragma('auto_vacuum', { simple: true }) as number,
    }),
    incrementalVacuum(pages) {
      db.pragma(`incremental_vacuum(${Math.max(1, Math.trunc(pages))})`);
    },
    checkpoint() {
      db.pragma('wal_checkpoint(PASSIVE)');
    },
  };
}
