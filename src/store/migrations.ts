/**
 * Schema of the harvest database, as an ordered list of migrations. Migration `i` takes the
 * database from `PRAGMA user_version = i` to `i + 1`; `openStore` applies the missing ones in a
 * single immediate transaction, so a half-migrated file never exists and two processes opening
 * the same file at once do not both migrate. Never edit a migration that has shipped: append.
 *
 * Times are integers in milliseconds since the Unix epoch (UTC); JSON columns end in `_json`.
 * Calls and results carry no foreign keys: an API call is recorded even when its run or task
 * row is missing, because the credits were spent all the same.
 */
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
];

/** The `user_version` a fully migrated database has. */
export const SCHEMA_VERSION = MIGRATIONS.length;
