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
];

/** The `user_version` a fully migrated database has. */
export const SCHEMA_VERSION = MIGRATIONS.length;
