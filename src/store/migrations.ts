/**
 * Schema of the harvest database, as an ordered list of migrations. Migration `i` takes the
 * database from `PRAGMA user_version = i` to `i + 1`; `openStore` applies the missing ones in a
 * single immediate transaction, so a half-migrated file never exists and two processes opening
 * the same file at once do not both migrate. Never edit a migration that has shipped: append.
 *
 * Times are integers in milliseconds since the Unix epoch (UTC); JSON columns end in `_json`.
 * Calls and results carry no foreign keys: an API call is recorded even when its run or task
 * row is missing, because the credits were spent all the same.
 *
 * Long because it is a declarative list: one entry per schema version, never edited once shipped.
 */
import { CONTENT_COLUMNS } from './contents.ts';
import { CONTENTS_MIGRATION } from './contents-migration.ts';

export const MIGRATIONS: readonly string[] = [
  // 1: pipelines, runs, tasks, calls, results, seen_urls.
  `
  CREATE TABLE pipelines (
    id          INTEGER PRIMARY KEY,
    name        TEXT    NOT NULL,
    hash        TEXT    NOT NULL,
    yaml_text   TEXT    NOT NULL,
    created_at  INTEGER NOT NULL,
    UNIQUE (name, hash)
  );

  CREATE TABLE runs (
    id            TEXT    PRIMARY KEY,
    pipeline_id   INTEGER NOT NULL REFERENCES pipelines (id),
    status        TEXT    NOT NULL DEFAULT 'queued'
                  CHECK (status IN ('queued', 'running', 'paused', 'completed', 'failed', 'cancelled')),
    paused_reason TEXT,
    trigger       TEXT    NOT NULL CHECK (trigger IN ('manual', 'schedule', 'resume')),
    max_credits   INTEGER,
    task_count    INTEGER NOT NULL DEFAULT 0,
    created_at    INTEGER NOT NULL,
    started_at    INTEGER,
    finished_at   INTEGER
  );
  CREATE INDEX runs_pipeline_created ON runs (pipeline_id, created_at);
  CREATE INDEX runs_created ON runs (created_at);

  CREATE TABLE tasks (
    run_id             TEXT    NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    task_key           TEXT    NOT NULL,
    request_json       TEXT    NOT NULL,
    search_id          TEXT,
    tags_json          TEXT,
    status             TEXT    NOT NULL DEFAULT 'queued'
                       CHECK (status IN ('queued', 'running', 'retrying', 'done', 'failed')),
    attempts           INTEGER NOT NULL DEFAULT 0,
    last_error_code    TEXT,
    last_error_message TEXT,
    credits_used       INTEGER NOT NULL DEFAULT 0,
    updated_at         INTEGER NOT NULL,
    PRIMARY KEY (run_id, task_key)
  ) WITHOUT ROWID;
  CREATE INDEX tasks_run_status ON tasks (run_id, status);

  CREATE TABLE calls (
    call_id        TEXT    PRIMARY KEY,
    run_id         TEXT    NOT NULL,
    task_key       TEXT    NOT NULL,
    attempt        INTEGER NOT NULL,
    started_at     INTEGER NOT NULL,
    duration_ms    INTEGER NOT NULL,
    status         INTEGER,
    outcome        TEXT    NOT NULL,
    error_message  TEXT,
    search_id      TEXT,
    warning        TEXT,
    credits_used   INTEGER,
    retry_after_ms INTEGER
  );
  CREATE INDEX calls_run ON calls (run_id);
  CREATE INDEX calls_started ON calls (started_at);

  CREATE TABLE results (
    run_id          TEXT    NOT NULL,
    task_key        TEXT    NOT NULL,
    source          TEXT    NOT NULL CHECK (source IN ('web', 'news', 'images')),
    position        INTEGER NOT NULL,
    url             TEXT,
    title           TEXT,
    description     TEXT,
    category        TEXT,
    markdown        TEXT,
    html            TEXT,
    raw_html        TEXT,
    links_json      TEXT,
    screenshot_url  TEXT,
    audio_url       TEXT,
    video_url       TEXT,
    metadata_json   TEXT,
    item_json       TEXT    NOT NULL,
    search_id       TEXT,
    call_id         TEXT    NOT NULL,
    first_seen_at   INTEGER NOT NULL,
    fetched_at      INTEGER NOT NULL,
    PRIMARY KEY (run_id, task_key, source, position)
  );
  CREATE INDEX results_url ON results (url);

  CREATE TABLE seen_urls (
    pipeline_name TEXT    NOT NULL,
    url           TEXT    NOT NULL,
    first_seen_at INTEGER NOT NULL,
    last_seen_at  INTEGER NOT NULL,
    first_run_id  TEXT    NOT NULL,
    last_run_id   TEXT    NOT NULL,
    PRIMARY KEY (pipeline_name, url)
  ) WITHOUT ROWID;
  CREATE INDEX seen_urls_first_run ON seen_urls (first_run_id);
  `,
  // 2: run_counts, a run's task statuses and call totals kept by triggers, so progress is one
  // row read however large the run (instead of GROUP BYs over its tasks and calls).
  `
  CREATE TABLE run_counts (
    run_id             TEXT    PRIMARY KEY,
    queued             INTEGER NOT NULL DEFAULT 0,
    running            INTEGER NOT NULL DEFAULT 0,
    retrying           INTEGER NOT NULL DEFAULT 0,
    done               INTEGER NOT NULL DEFAULT 0,
    failed             INTEGER NOT NULL DEFAULT 0,
    calls              INTEGER NOT NULL DEFAULT 0,
    credits_used       INTEGER NOT NULL DEFAULT 0,
    unknown_cost_calls INTEGER NOT NULL DEFAULT 0
  ) WITHOUT ROWID;

  INSERT INTO run_counts (run_id, queued, running, retrying, done, failed)
    SELECT run_id, SUM(status = 'queued'), SUM(status = 'running'), SUM(status = 'retrying'),
           SUM(status = 'done'), SUM(status = 'failed')
    FROM tasks GROUP BY run_id;
  INSERT INTO run_counts (run_id, calls, credits_used, unknown_cost_calls)
    SELECT run_id, COUNT(*), COALESCE(SUM(credits_used), 0), SUM(credits_used IS NULL)
    FROM calls WHERE true GROUP BY run_id
    ON CONFLICT (run_id) DO UPDATE SET
      calls = excluded.calls,
      credits_used = excluded.credits_used,
      unknown_cost_calls = excluded.unknown_cost_calls;

  CREATE TRIGGER tasks_count_insert AFTER INSERT ON tasks BEGIN
    INSERT INTO run_counts (run_id, queued, running, retrying, done, failed)
      VALUES (NEW.run_id, NEW.status = 'queued', NEW.status = 'running',
              NEW.status = 'retrying', NEW.status = 'done', NEW.status = 'failed')
      ON CONFLICT (run_id) DO UPDATE SET
        queued = queued + excluded.queued,
        running = running + excluded.running,
        retrying = retrying + excluded.retrying,
        done = done + excluded.done,
        failed = failed + excluded.failed;
  END;

  CREATE TRIGGER tasks_count_update AFTER UPDATE OF status ON tasks
  WHEN OLD.status <> NEW.status BEGIN
    UPDATE run_counts SET
      queued = queued - (OLD.status = 'queued') + (NEW.status = 'queued'),
      running = running - (OLD.status = 'running') + (NEW.status = 'running'),
      retrying = retrying - (OLD.status = 'retrying') + (NEW.status = 'retrying'),
      done = done - (OLD.status = 'done') + (NEW.status = 'done'),
      failed = failed - (OLD.status = 'failed') + (NEW.status = 'failed')
    WHERE run_id = NEW.run_id;
  END;

  CREATE TRIGGER tasks_count_delete AFTER DELETE ON tasks BEGIN
    UPDATE run_counts SET
      queued = queued - (OLD.status = 'queued'),
      running = running - (OLD.status = 'running'),
      retrying = retrying - (OLD.status = 'retrying'),
      done = done - (OLD.status = 'done'),
      failed = failed - (OLD.status = 'failed')
    WHERE run_id = OLD.run_id;
  END;

  CREATE TRIGGER calls_count_insert AFTER INSERT ON calls BEGIN
    INSERT INTO run_counts (run_id, calls, credits_used, unknown_cost_calls)
      VALUES (NEW.run_id, 1, COALESCE(NEW.credits_used, 0), NEW.credits_used IS NULL)
      ON CONFLICT (run_id) DO UPDATE SET
        calls = calls + 1,
        credits_used = credits_used + excluded.credits_used,
        unknown_cost_calls = unknown_cost_calls + excluded.unknown_cost_calls;
  END;

  CREATE TRIGGER runs_count_delete AFTER DELETE ON runs BEGIN
    DELETE FROM run_counts WHERE run_id = OLD.id;
  END;
  `,
  // 3: a call recorded as LOST (its worker fell silent) is replaced by its real record when
  // that arrives after all; the run's credit totals follow.
  `
  CREATE TRIGGER calls_count_update AFTER UPDATE OF credits_used ON calls BEGIN
    UPDATE run_counts SET
      credits_used = credits_used - COALESCE(OLD.credits_used, 0) + COALESCE(NEW.credits_used, 0),
      unknown_cost_calls = unknown_cost_calls - (OLD.credits_used IS NULL)
                           + (NEW.credits_used IS NULL)
    WHERE run_id = NEW.run_id;
  END;
  `,
  // 4: media, the files behind a result's signed URLs (screenshot, audio, video, and the
  // screenshots and PDFs of actions), one row per result, kind and item. `path` is relative to
  // the data directory; files are content-addressed, so rows with the same `sha256` share one.
  // Calls say why they were made: a task's search, or a re-issue for fresh media URLs.
  `
  CREATE TABLE media (
    id            INTEGER PRIMARY KEY,
    run_id        TEXT    NOT NULL,
    task_key      TEXT    NOT NULL,
    source        TEXT    NOT NULL CHECK (source IN ('web', 'news', 'images')),
    position      INTEGER NOT NULL,
    kind          TEXT    NOT NULL
                  CHECK (kind IN ('screenshot', 'audio', 'video', 'action-screenshot', 'action-pdf')),
    item_index    INTEGER NOT NULL DEFAULT 0,
    status        TEXT    NOT NULL DEFAULT 'pending'
                  CHECK (status IN ('pending', 'saved', 'failed', 'expired')),
    source_url    TEXT    NOT NULL,
    result_url    TEXT,
    issued_at     INTEGER NOT NULL,
    deadline_at   INTEGER NOT NULL,
    attempts      INTEGER NOT NULL DEFAULT 0,
    reissues      INTEGER NOT NULL DEFAULT 0,
    sha256        TEXT,
    path          TEXT,
    bytes         INTEGER,
    content_type  TEXT,
    saved_at      INTEGER,
    error_code    TEXT,
    error_message TEXT,
    updated_at    INTEGER NOT NULL,
    UNIQUE (run_id, task_key, source, position, kind, item_index)
  );
  CREATE INDEX media_run_status ON media (run_id, status);
  CREATE INDEX media_status_deadline ON media (status, deadline_at);
  CREATE INDEX media_sha256 ON media (sha256);

  ALTER TABLE calls ADD COLUMN purpose TEXT NOT NULL DEFAULT 'search'
    CHECK (purpose IN ('search', 'media-reissue'));
  `,
  // 5: a run stopped by its user before it finished is 'interrupted' (Ctrl-C of a local run;
  // only a resume continues it). SQLite cannot change a CHECK constraint in place: the table
  // is rebuilt (foreign keys are off while migrations run, see db.ts).
  `
  CREATE TABLE runs_new (
    id            TEXT    PRIMARY KEY,
    pipeline_id   INTEGER NOT NULL REFERENCES pipelines (id),
    status        TEXT    NOT NULL DEFAULT 'queued'
                  CHECK (status IN ('queued', 'running', 'paused', 'interrupted', 'completed',
                                    'failed', 'cancelled')),
    paused_reason TEXT,
    trigger       TEXT    NOT NULL CHECK (trigger IN ('manual', 'schedule', 'resume')),
    max_credits   INTEGER,
    task_count    INTEGER NOT NULL DEFAULT 0,
    created_at    INTEGER NOT NULL,
    started_at    INTEGER,
    finished_at   INTEGER
  );
  INSERT INTO runs_new SELECT id, pipeline_id, status, paused_reason, trigger, max_credits,
    task_count, created_at, started_at, finished_at FROM runs;
  DROP TABLE runs;
  ALTER TABLE runs_new RENAME TO runs;
  CREATE INDEX runs_pipeline_created ON runs (pipeline_id, created_at);
  CREATE INDEX runs_created ON runs (created_at);
  CREATE TRIGGER runs_count_delete AFTER DELETE ON runs BEGIN
    DELETE FROM run_counts WHERE run_id = OLD.id;
  END;
  `,
  // 6: run_estimates, the credit bounds of a run's plan, recorded with the plan, so cost reports
  // can put the estimate beside what the service charged. A table of its own (not columns of
  // runs): runs planned before it simply have no estimate.
  `
  CREATE TABLE run_estimates (
    run_id      TEXT    PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
    min_credits INTEGER NOT NULL,
    max_credits INTEGER NOT NULL,
    tasks       INTEGER NOT NULL
  ) WITHOUT ROWID;
  `,
  // 7: schedules. schedule_ticks: every tick of a pipeline's job scheduler, keyed by the time it
  // was due, with what it did (started a run, or skipped because the pipeline's previous run
  // was still going); a tick redelivered after a crash finds its row and never starts a second
  // run. notifications: the webhook of a scheduled run, written when the run starts and sent
  // once it has finished (so a crash between the two loses nothing), and each delivery attempt.
  `
  CREATE TABLE schedule_ticks (
    pipeline_name TEXT    NOT NULL,
    due_at        INTEGER NOT NULL,
    taken_at      INTEGER NOT NULL,
    pipeline_hash TEXT    NOT NULL,
    outcome       TEXT    NOT NULL CHECK (outcome IN ('starting', 'started', 'skipped', 'failed')),
    run_id        TEXT,
    reason        TEXT,
    updated_at    INTEGER NOT NULL,
    PRIMARY KEY (pipeline_name, due_at)
  ) WITHOUT ROWID;
  CREATE INDEX schedule_ticks_starting ON schedule_ticks (pipeline_name)
    WHERE outcome = 'starting';

  CREATE TABLE notifications (
    run_id        TEXT    PRIMARY KEY,
    url           TEXT    NOT NULL,
    state         TEXT    NOT NULL DEFAULT 'pending'
                  CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts      INTEGER NOT NULL DEFAULT 0,
    last_status   INTEGER,
    last_error    TEXT,
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL,
    delivered_at  INTEGER
  ) WITHOUT ROWID;
  CREATE INDEX notifications_pending ON notifications (run_id) WHERE state = 'pending';

  CREATE TABLE notification_attempts (
    run_id      TEXT    NOT NULL,
    attempt     INTEGER NOT NULL,
    at          INTEGER NOT NULL,
    duration_ms INTEGER NOT NULL,
    status      INTEGER,
    error       TEXT,
    PRIMARY KEY (run_id, attempt)
  ) WITHOUT ROWID;
  `,
  // 8: what a run saves of its media (run_media, written with the run, before any result), the
  // URL's own expiry and when a media row was handed to the media queue (rows are written with
  // their results, in the same transaction, and queued afterwards: a row without `queued_at`
  // has no job yet). run_media also keeps each run's media counts, by triggers, so progress
  // reads one row.
  `
  CREATE TABLE run_media (
    run_id        TEXT    PRIMARY KEY,
    kinds_json    TEXT    NOT NULL,
    dir           TEXT    NOT NULL,
    max_bytes     INTEGER NOT NULL,
    margin_max_ms INTEGER NOT NULL,
    requested     INTEGER NOT NULL DEFAULT 0,
    pending       INTEGER NOT NULL DEFAULT 0,
    saved         INTEGER NOT NULL DEFAULT 0,
    failed        INTEGER NOT NULL DEFAULT 0,
    expired       INTEGER NOT NULL DEFAULT 0
  ) WITHOUT ROWID;

  ALTER TABLE media ADD COLUMN expires_at INTEGER;
  ALTER TABLE media ADD COLUMN queued_at INTEGER;
  CREATE INDEX media_unqueued ON media (deadline_at) WHERE status = 'pending' AND queued_at IS NULL;
  CREATE INDEX media_run_pending ON media (run_id, deadline_at) WHERE status = 'pending';
  CREATE INDEX media_task ON media (run_id, task_key);

  CREATE TRIGGER media_count_insert AFTER INSERT ON media BEGIN
    UPDATE run_media SET
      requested = requested + 1,
      pending = pending + (NEW.status = 'pending'),
      saved = saved + (NEW.status = 'saved'),
      failed = failed + (NEW.status = 'failed'),
      expired = expired + (NEW.status = 'expired')
    WHERE run_id = NEW.run_id;
  END;

  CREATE TRIGGER media_count_update AFTER UPDATE OF status ON media
  WHEN OLD.status <> NEW.status BEGIN
    UPDATE run_media SET
      pending = pending - (OLD.status = 'pending') + (NEW.status = 'pending'),
      saved = saved - (OLD.status = 'saved') + (NEW.status = 'saved'),
      failed = failed - (OLD.status = 'failed') + (NEW.status = 'failed'),
      expired = expired - (OLD.status = 'expired') + (NEW.status = 'expired')
    WHERE run_id = NEW.run_id;
  END;

  CREATE TRIGGER media_count_delete AFTER DELETE ON media BEGIN
    UPDATE run_media SET
      requested = requested - 1,
      pending = pending - (OLD.status = 'pending'),
      saved = saved - (OLD.status = 'saved'),
      failed = failed - (OLD.status = 'failed'),
      expired = expired - (OLD.status = 'expired')
    WHERE run_id = OLD.run_id;
  END;
  `,
  // 9: seen_urls gets a row id, in the order URLs were first seen, and each result the id of its
  // URL's row (results.seen_id). Exports read first/last seen for every result: keyed by
  // (pipeline, url) the rows lay in URL order, so each lookup landed on a page of its own (1M
  // results: 45% of the export query's time); by id in first-seen order, the rows of a run's
  // results lie together. Existing rows are numbered by when they were first seen.
  `
  CREATE TABLE seen_urls_by_id (
    id            INTEGER PRIMARY KEY,
    pipeline_name TEXT    NOT NULL,
    url           TEXT    NOT NULL,
    first_seen_at INTEGER NOT NULL,
    last_seen_at  INTEGER NOT NULL,
    first_run_id  TEXT    NOT NULL,
    last_run_id   TEXT    NOT NULL
  );
  INSERT INTO seen_urls_by_id (pipeline_name, url, first_seen_at, last_seen_at, first_run_id,
                               last_run_id)
    SELECT pipeline_name, url, first_seen_at, last_seen_at, first_run_id, last_run_id
    FROM seen_urls ORDER BY first_seen_at, first_run_id, url;
  DROP TABLE seen_urls;
  ALTER TABLE seen_urls_by_id RENAME TO seen_urls;
  CREATE UNIQUE INDEX seen_urls_key ON seen_urls (pipeline_name, url);
  CREATE INDEX seen_urls_first_run ON seen_urls (first_run_id);

  ALTER TABLE results ADD COLUMN seen_id INTEGER;
  UPDATE results SET seen_id = s.id
    FROM runs ru, pipelines p, seen_urls s
    WHERE ru.id = results.run_id AND p.id = ru.pipeline_id
      AND s.pipeline_name = p.name AND s.url = results.url;
  `,
  // 10: when the latest response stored for a task arrived (tasks.results_fetched_at), kept
  // apart from its result rows: a response with no items leaves none, and an older response
  // arriving after it was then taken for the latest. Tasks stored before keep NULL, and their
  // rows' fetched_at still says it (results.ts).
  `
  ALTER TABLE tasks ADD COLUMN results_fetched_at INTEGER;
  `,
  // 11: two media indexes that every saved file paid for. `media_sha256` served no query
  // (files are found by their path, and content is deduplicated on disk), yet each save
  // inserted a random 64-hex key. `media_status_deadline` kept every row by status: the
  // soonest deadline reads pending rows only, now from a partial index a row leaves when it
  // ends; the status gauges read run_media's counts, and the failures of `harvest media` are
  // grouped in one pass over the run's rows.
  `
  DROP INDEX IF EXISTS media_sha256;
  DROP INDEX IF EXISTS media_status_deadline;
  CREATE INDEX media_pending_deadline ON media (deadline_at) WHERE status = 'pending';
  `,
  // 12: retention. pruned_costs: what `harvest prune` removed of a run's calls and results,
  // summed per (run, side, UTC day, sources, formats, outcome), every figure of the cost report
  // kept, so reports stay true once the rows are gone. retention_due: a scheduled run whose
  // pipeline declares `retention`, written when the run starts, applied once it has finished.
  `
  CREATE TABLE pruned_costs (
    run_id                TEXT    NOT NULL,
    side                  TEXT    NOT NULL CHECK (side IN ('call', 'result')),
    day                   TEXT    NOT NULL,
    sources               TEXT    NOT NULL,
    formats               TEXT    NOT NULL,
    outcome               TEXT    NOT NULL,
    first_at              INTEGER NOT NULL,
    calls                 INTEGER NOT NULL DEFAULT 0,
    failed_calls          INTEGER NOT NULL DEFAULT 0,
    credits_used          INTEGER NOT NULL DEFAULT 0,
    unknown_cost_calls    INTEGER NOT NULL DEFAULT 0,
    lost_calls            INTEGER NOT NULL DEFAULT 0,
    retry_calls           INTEGER NOT NULL DEFAULT 0,
    retry_credits         INTEGER NOT NULL DEFAULT 0,
    retry_unknown_calls   INTEGER NOT NULL DEFAULT 0,
    reissue_calls         INTEGER NOT NULL DEFAULT 0,
    reissue_credits       INTEGER NOT NULL DEFAULT 0,
    reissue_unknown_calls INTEGER NOT NULL DEFAULT 0,
    anomaly_calls         INTEGER NOT NULL DEFAULT 0,
    anomaly_credits       INTEGER NOT NULL DEFAULT 0,
    results               INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (run_id, side, day, sources, formats, outcome)
  ) WITHOUT ROWID;

  CREATE TABLE retention_due (
    run_id        TEXT    PRIMARY KEY,
    pipeline_name TEXT    NOT NULL,
    keep_runs     INTEGER,
    max_age_ms    INTEGER,
    created_at    INTEGER NOT NULL,
    applied_at    INTEGER,
    outcome       TEXT
  ) WITHOUT ROWID;
  CREATE INDEX retention_due_pending ON retention_due (run_id) WHERE applied_at IS NULL;
  `,
  // 13: what changed since the previous run (src/store/changes/). result_changes: per result
  // of a finished run (by the results' key), its search across runs (search_key), its content
  // hash, and how it compares with the same search in the baseline run (the pipeline's previous
  // completed run). dropped_results: the baseline's results its search no longer answered.
  // change_runs: which run each run was compared with, when, and the counts.
  // results.change_hash: each result's content hash, written with it (filled for the rows
  // written before by migration 14's conversion, which reads their content anyway).
  `
  CREATE TABLE change_runs (
    run_id          TEXT    PRIMARY KEY,
    baseline_run_id TEXT,
    finished_at     INTEGER,
    recorded_at     INTEGER NOT NULL,
    results         INTEGER NOT NULL,
    new             INTEGER NOT NULL,
    same            INTEGER NOT NULL,
    changed         INTEGER NOT NULL,
    dropped         INTEGER NOT NULL,
    moved_up        INTEGER NOT NULL,
    moved_down      INTEGER NOT NULL
  ) WITHOUT ROWID;

  CREATE TABLE result_changes (
    run_id            TEXT    NOT NULL,
    task_key          TEXT    NOT NULL,
    source            TEXT    NOT NULL,
    position          INTEGER NOT NULL,
    search_key        TEXT    NOT NULL,
    status            TEXT    NOT NULL CHECK (status IN ('new', 'same', 'changed')),
    content_hash      TEXT    NOT NULL,
    previous_position INTEGER,
    previous_hash     TEXT,
    last_changed_run  TEXT    NOT NULL,
    PRIMARY KEY (run_id, task_key, source, position)
  ) WITHOUT ROWID;

  CREATE TABLE dropped_results (
    run_id            TEXT    NOT NULL,
    search_key        TEXT    NOT NULL,
    source            TEXT    NOT NULL,
    url               TEXT    NOT NULL,
    previous_task_key TEXT    NOT NULL,
    previous_position INTEGER NOT NULL,
    previous_hash     TEXT    NOT NULL,
    PRIMARY KEY (run_id, search_key, source, url)
  ) WITHOUT ROWID;

  ALTER TABLE results ADD COLUMN change_hash TEXT;
  `,
  // 14: contents, scraped content stored once per distinct value, compressed, referenced from
  // results by *_hash columns; item_json keeps the rest of the item. The old content columns
  // stay, NULL, guarded by triggers (until 16). The rows written before are converted by
  // ./contents-migration.ts, right after this schema change, in the same transaction.
  CONTENTS_MIGRATION,
  // 15: implausible credits. credits_max: the most the call's request could cost by the credit
  // rules (NULL: not foreseeable, or recorded before). credits_anomaly: 1 when creditsUsed was
  // above that times HARVEST_CREDITS_ANOMALY_FACTOR (stored as billed all the same), with a
  // partial index, as such calls are few.
  `
  ALTER TABLE calls ADD COLUMN credits_max INTEGER;
  ALTER TABLE calls ADD COLUMN credits_anomaly INTEGER NOT NULL DEFAULT 0;
  CREATE INDEX calls_credits_anomaly ON calls (run_id) WHERE credits_anomaly = 1;
  `,
  // 16: the old content columns of results go, and with them the triggers that guarded them
  // (a trigger runs as a program of its own for every row written: about 20 µs per result). A
  // worker of a version before 14 still running against the file has its writes of results
  // refused by SQLite itself (`table results has no column named markdown`), as the triggers
  // refused them. DROP COLUMN rewrites every result row, once.
  `
  DROP TRIGGER results_old_layout_insert;
  DROP TRIGGER results_old_layout_update;
  ALTER TABLE results DROP COLUMN markdown;
  ALTER TABLE results DROP COLUMN html;
  ALTER TABLE results DROP COLUMN raw_html;
  ALTER TABLE results DROP COLUMN links_json;
  ALTER TABLE results DROP COLUMN metadata_json;
  `,
  // 17: which results reference a content, by index (only rows that reference one have an
  // entry): `harvest prune` checks each content it removes, a batch at a time.
  `
  ${Object.values(CONTENT_COLUMNS)
    .map((c) => `CREATE INDEX results_${c} ON results (${c}) WHERE ${c} IS NOT NULL;`)
    .join('\n  ')}
  `,
];

/** The `user_version` a fully migrated database has. */
export const SCHEMA_VERSION = MIGRATIONS.length;
