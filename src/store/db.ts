/**
 * `openStore`: opens (creating and migrating when needed) the harvest SQLite database and
 * returns the typed Store. All SQL of harvest lives under src/store. Nothing here stores
 * request headers or the API key.
 *
 * One module, over 300 lines, because opening is one sequence that must not be reordered: refuse
 * a foreign file, configure, migrate in one transaction, then assemble the tables.
 */
import fs from 'node:fs';
import path from 'node:path';
import Sqlite, { type Database } from 'better-sqlite3';
import { HarvestError } from '../errors.ts';
import { statIfExists } from '../files.ts';
import { type ApplyEvents, type ApplyReport, createApplyEvents } from './apply-events.ts';
import { type CallsTable, createCallsTable } from './calls.ts';
import { type Changes, createChanges } from './changes/index.ts';
import { type Clock, systemClock } from './clock.ts';
import { registerContentFunctions } from './contents.ts';
import { CONTENTS_MIGRATION, convertContents } from './contents-migration.ts';
import { createMediaTable, type MediaTable } from './media.ts';
import { MIGRATIONS, SCHEMA_VERSION } from './migrations.ts';
import { createNotificationsTable, type NotificationsTable } from './notifications.ts';
import { directoryError, folderError, foreignError, openError } from './open-errors.ts';
import { createPipelinesTable, type PipelinesTable } from './pipelines.ts';
import { createPruneTable, type PruneTable } from './prune.ts';
import { createExportReader, type ExportReader } from './queries/export.ts';
import { createStoreGauges, type StoreGauges } from './queries/gauges.ts';
import { createMediaReports, type MediaReports } from './queries/media-report.ts';
import { createReports, type Reports } from './queries/reports.ts';
import { createRunStatus, type RunStatusFn } from './queries/status.ts';
import { type ReadOnlyFolder, readOnlySource } from './read-only-folder.ts';
import {
  createResultsTable,
  type ResultFilter,
  type ResultRow,
  type ResultsTable,
} from './results.ts';
import { createRunEstimatesTable, type RunEstimatesTable } from './run-estimates.ts';
import { createRunsTable, type RunsTable } from './runs.ts';
import { createScheduleTicksTable, type ScheduleTicksTable } from './schedule-ticks.ts';
import { createSeenUrlsTable, type SeenUrlsTable } from './seen-urls.ts';
import { createTasksTable, type TasksTable } from './tasks.ts';

export interface OpenStoreOptions {
  /**
   * Open without writing: the file must exist and be fully migrated. For readers on the
   * database host (status, export, reports) next to a running writer. Default false.
   */
  readonly?: boolean;
  /**
   * The file must exist (a command that acts on recorded runs: cancel, resume), even when
   * opened to write: a missing one is not made, empty, where the user pointed by mistake.
   */
  mustExist?: boolean;
  /**
   * With `readonly`: told when the database's folder cannot be written (a read-only mount),
   * before it is read in place or from a private copy (./read-only-folder.ts).
   */
  onReadOnlyFolder?: (how: ReadOnlyFolder) => void;
  /** Wait this long for a lock held by another process, in ms. Default 5000. */
  busyTimeoutMs?: number;
  /** Source of the current time, ms since the epoch. Default `Date.now`. */
  now?: Clock;
  /**
   * SQLite's `synchronous` for writes. Default `full`: a commit that has returned survives a
   * power loss (in WAL mode, each commit syncs the log). Harvest acknowledges records to
   * Redis (store jobs completed, in-flight entries removed) once they are committed, so
   * `normal`, which may roll back the last commits on power loss, could lose billed calls.
   */
  synchronous?: 'full' | 'normal';
  /**
   * Told when an existing database is upgraded to this harvest's schema: before the migrations
   * (no `durationMs`) and after them. One transaction rewrites what it must, which on a large
   * database takes a while: a command says so rather than sit silent. A new file is not told.
   */
  onMigrate?: (step: MigrationStep) => void;
}

export interface MigrationStep {
  file: string;
  from: number;
  to: number;
  /** Set once the migrations are committed. */
  durationMs?: number;
  /** A line about a step that rewrites rows: how far it is, or what it saved. */
  note?: string;
}

export interface Store extends Reports, MediaReports {
  /** Absolute path of the database file. */
  readonly path: string;
  readonly readonly: boolean;
  /**
   * Read from a private copy, its folder not being writable (./read-only-folder.ts): no other
   * connection (an export's reader threads) can open the database at `path`.
   */
  readonly readsCopy: boolean;
  /** How long a write waits for a lock held by another process, in ms (opening option). */
  readonly busyTimeoutMs: number;
  readonly pipelines: PipelinesTable;
  readonly runs: RunsTable;
  readonly tasks: TasksTable;
  readonly calls: CallsTable;
  readonly results: ResultsTable;
  readonly seenUrls: SeenUrlsTable;
  readonly runEstimates: RunEstimatesTable;
  /** The rows of `harvest export`, streamed; see export.ts. */
  readonly exports: ExportReader;
  /** What each tick of a pipeline's schedule did. */
  readonly ticks: ScheduleTicksTable;
  /** Webhooks of scheduled runs and their delivery attempts. */
  readonly notifications: NotificationsTable;
  /** What the Prometheus metrics read from the database. */
  readonly gauges: StoreGauges;
  /** Media rows (files behind signed URLs) and what each run saves. */
  readonly media: MediaTable;
  /** What changed in each finished run since the previous one; see changes/record.ts. */
  readonly changes: Changes;
  /** What `harvest prune` and pipelines' retention read and remove; see prune.ts. */
  readonly prune: PruneTable;
  /** Validates and writes worker events in one transaction; see apply-events.ts. */
  readonly applyEvents: ApplyEvents;
  /** What `harvest status` shows for a run; undefined when the run does not exist. */
  readonly runStatus: RunStatusFn;
  /**
   * Runs `fn` in one read transaction, so that every figure it reads comes from the same
   * snapshot of the database although a writer commits meanwhile (a report's rows and its
   * totals). Synchronous: `fn` must not wait on anything. Nested calls join the outer one.
   */
  snapshot<T>(fn: () => T): T;
  /**
   * Whether the file at `path` is no longer the one this connection has open (deleted or
   * replaced meanwhile): commits are refused then (`STORE_REPLACED`).
   */
  replaced(): boolean;
  /** Streams result rows (of one run when given a run id); see `ResultsTable.iterate`. */
  iterateResults(filter?: string | ResultFilter): IterableIterator<ResultRow>;
  /** Closes the connection; idempotent. */
  close(): void;
}

export function openStore(dbPath: string, options: OpenStoreOptions = {}): Store {
  const file = path.resolve(dbPath);
  const readonly = options.readonly ?? false;
  let info: fs.Stats | undefined;
  try {
    info = statIfExists(file);
  } catch (error) {
    throw folderError(file, path.dirname(file), error);
  }
  if (info?.isDirectory()) throw directoryError(file);
  if ((readonly || options.mustExist) && !fs.existsSync(file)) {
    throw new HarvestError(
      'STORE_NOT_FOUND',
      `no harvest database at ${file}: nothing has run with it yet (set HARVEST_DB, or HARVEST_DATA_DIR, to where runs were recorded)`,
      { exitCode: 2 },
    );
  }
  if (!readonly) {
    const folder = path.dirname(file);
    try {
      fs.mkdirSync(folder, { recursive: true });
    } catch (error) {
      throw folderError(file, folder, error);
    }
  }

  const busyTimeoutMs = options.busyTimeoutMs ?? 5000;
  // Messages and the identity `replaced()` compares name `file`, also when a copy is read.
  const source = readonly
    ? readOnlySource(file, options.onReadOnlyFolder)
    : { path: file, copy: false, release() {} };
  let db: Database;
  try {
    db = new Sqlite(source.path, {
      readonly,
      fileMustExist: readonly,
      timeout: busyTimeoutMs,
    });
  } catch (error) {
    source.release();
    throw openError(file, readonly, error);
  }
  try {
    configure(db, file, readonly, busyTimeoutMs, options.synchronous ?? 'full');
    migrate(db, file, readonly, options.onMigrate);
    // Open and read: a copy is unlinked now, so that nothing of it outlives the process.
    source.release();
    const opened = { readonly, busyTimeoutMs, readsCopy: source.copy };
    return buildStore(db, file, opened, options.now ?? systemClock);
  } catch (error) {
    db.close();
    source.release();
    throw openError(file, readonly, error);
  }
}

function configure(
  db: Database,
  file: string,
  readonly: boolean,
  busyTimeoutMs: number,
  synchronous: 'full' | 'normal',
): void {
  db.pragma(`busy_timeout = ${Math.max(0, Math.trunc(busyTimeoutMs))}`);
  db.pragma('foreign_keys = ON');
  // Before anything is written (WAL mode is recorded in the file): another application's
  // database is left as it is.
  refuseForeign(db, file);
  if (!readonly) {
    // A new file gives freed pages back to the file system in steps (`harvest prune`); the
    // mode can only be set before the first table, and before WAL mode is written.
    if (db.pragma('user_version', { simple: true }) === 0) db.pragma('auto_vacuum = INCREMENTAL');
    db.pragma('journal_mode = WAL');
    db.pragma(`synchronous = ${synchronous === 'full' ? 'FULL' : 'NORMAL'}`);
  }
}

/**
 * Throws when the file is not harvest's: schema version 0 (what every SQLite file starts with)
 * but something in it. A version-0 file is a new harvest database only when it is empty:
 * harvest's first migration creates its tables and sets the version in one transaction, so a
 * harvest database never has tables at version 0. SQLite's own `sqlite_*` tables are not counted.
 */
function refuseForeign(db: Database, file: string): void {
  const names = db.transaction(() => {
    if ((db.pragma('user_version', { simple: true }) as number) !== 0) return [];
    return db
      .prepare<[], string>(
        `SELECT name FROM sqlite_master WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\'
         ORDER BY type <> 'table', name`,
      )
      .pluck()
      .all();
  })();
  if (names.length > 0) throw foreignError(file, names, SCHEMA_VERSION);
}

/** A file's identity (device and inode), or undefined when there is none at `file`. */
function identityOf(file: string): string | undefined {
  const info = statIfExists(file);
  return info ? `${info.dev}:${info.ino}` : undefined;
}

/**
 * `apply`, refusing to commit once the database file was deleted or replaced under this
 * connection (by hand, by a restore, by another tool): SQLite would go on writing to the open,
 * unlinked file, and every record committed from then on, calls the service billed included,
 * would vanish with the process. The batch fails instead, so its records stay in Redis (the
 * search job, or the store queue, retried) for a harvest started against the file now there.
 */
function sameFileOnly(file: string, replaced: () => boolean, apply: ApplyEvents): ApplyEvents {
  return (events) => {
    if (replaced()) throw replacedError(file);
    return apply(events);
  };
}

export function replacedError(file: string): HarvestError {
  return new HarvestError(
    'STORE_REPLACED',
    `the database ${file} was deleted or replaced while harvest had it open: nothing more is ` +
      'written to the old one, and records wait in Redis; restart harvest (workers, run --local) ' +
      'to write them to the file there now',
    { exitCode: 3 },
  );
}

/**
 * Records the changes of each run a batch finished, in the batch's transaction, so no reader
 * sees a finished run without them. A failure there (its savepoint rolled back) leaves the
 * batch to commit: the changes are recorded when next asked for (`Changes.ensure`).
 */
function recordingChanges(
  runs: RunsTable,
  changes: Pick<Changes, 'ensure'>,
): (report: ApplyReport) => void {
  return (report) => {
    for (const runId of report.runsWithTaskChanges) {
      const status = runs.get(runId)?.status;
      if (status !== 'completed' && status !== 'failed') continue;
      try {
        changes.ensure(runId);
      } catch {
        // Recorded again when asked for; the events are committed all the same.
      }
    }
  };
}

/** Applies the missing migrations in one immediate transaction. */
function migrate(
  db: Database,
  file: string,
  readonly: boolean,
  onMigrate: OpenStoreOptions['onMigrate'],
): void {
  const version = () => db.pragma('user_version', { simple: true }) as number;
  const current = version();
  if (current > SCHEMA_VERSION) {
    throw new HarvestError(
      'STORE_TOO_NEW',
      `${file} has schema version ${current}; this harvest knows up to ${SCHEMA_VERSION}`,
      { exitCode: 3 },
    );
  }
  if (current === SCHEMA_VERSION) return;
  if (readonly) {
    throw new HarvestError(
      'STORE_OUTDATED',
      `${file} has schema version ${current} (needs ${SCHEMA_VERSION}): a command that writes ` +
        '(`harvest worker`, `harvest run`) migrates it when it opens it',
      { exitCode: 3 },
    );
  }
  // Foreign keys are off while tables are rebuilt (SQLite's procedure for schema changes it
  // cannot make in place: a DROP TABLE would otherwise cascade), and checked before commit.
  db.pragma('foreign_keys = OFF');
  let told: { from: number; at: number } | undefined;
  try {
    db.transaction(() => {
      // Read again under the write lock: another process may have migrated meanwhile.
      const from = version();
      // Nor has another application written its tables into the file since it was checked.
      if (from === 0) refuseForeign(db, file);
      if (from > 0 && from < SCHEMA_VERSION) {
        told = { from, at: performance.now() };
        onMigrate?.({ file, from, to: SCHEMA_VERSION });
      }
      for (let i = from; i < SCHEMA_VERSION; i++) {
        const sql = MIGRATIONS[i] ?? '';
        db.exec(sql);
        if (sql === CONTENTS_MIGRATION && from > 0) {
          convertContents(db, (note) => onMigrate?.({ file, from, to: SCHEMA_VERSION, note }));
        }
      }
      const broken = db.pragma('foreign_key_check') as unknown[];
      if (broken.length > 0) {
        throw new HarvestError(
          'STORE_MIGRATION_FAILED',
          `${file}: migrating to schema version ${SCHEMA_VERSION} would break ${broken.length} references`,
        );
      }
      if (from < SCHEMA_VERSION) db.pragma(`user_version = ${SCHEMA_VERSION}`);
    }).immediate();
    if (told !== undefined) {
      const durationMs = performance.now() - told.at;
      onMigrate?.({ file, from: told.from, to: SCHEMA_VERSION, durationMs });
    }
  } finally {
    db.pragma('foreign_keys = ON');
  }
}

function buildStore(
  db: Database,
  file: string,
  how: Pick<Store, 'readonly' | 'busyTimeoutMs' | 'readsCopy'>,
  now: Clock,
): Store {
  registerContentFunctions(db);
  const tables = {
    pipelines: createPipelinesTable(db, now),
    runs: createRunsTable(db, now),
    tasks: createTasksTable(db, now),
    calls: createCallsTable(db),
    results: createResultsTable(db),
    seenUrls: createSeenUrlsTable(db),
    runEstimates: createRunEstimatesTable(db),
    notifications: createNotificationsTable(db, now),
    media: createMediaTable(db, now),
  };
  const reports = { ...createReports(db), ...createMediaReports(db) };
  const changes = createChanges(db, tables, now);
  const opened = identityOf(file);
  const replaced = () => opened !== undefined && identityOf(file) !== opened;
  return {
    path: file,
    ...how,
    ...tables,
    ...reports,
    exports: createExportReader(db),
    ticks: createScheduleTicksTable(db, now),
    gauges: createStoreGauges(db),
    changes,
    applyEvents: sameFileOnly(
      file,
      replaced,
      createApplyEvents(db, tables, recordingChanges(tables.runs, changes)),
    ),
    prune: createPruneTable(db),
    replaced,
    runStatus: createRunStatus(db, { ...tables, mediaSummary: reports.mediaSummary }),
    snapshot: (fn) => db.transaction(fn)(),
    iterateResults: (filter) =>
      tables.results.iterate(typeof filter === 'string' ? { runId: filter } : filter),
    close() {
      if (db.open) db.close();
    },
  };
}
