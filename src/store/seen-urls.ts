/**
 * `seen_urls`: per pipeline name and URL, when (and in which run) it was first and last seen,
 * so a scheduled pipeline can export only what is new.
 */
import type { Database } from 'better-sqlite3';

export interface SeenUrlRow {
  pipelineName: string;
  url: string;
  /** ms since the epoch (the `fetchedAt` of the earliest response holding the URL). */
  firstSeenAt: number;
  lastSeenAt: number;
  firstRunId: string;
  lastRunId: string;
}

export interface SeenUrlsTable {
  /**
   * Records that `url` was in a response of `runId` fetched at `at` (ms since the epoch);
   * returns the id of its row (results keep it as `seen_id`).
   */
  touch(pipelineName: string, url: string, at: number, runId: string): number;
  get(pipelineName: string, url: string): SeenUrlRow | undefined;
  /** How many URLs were first seen in this run. */
  countFirstSeenIn(runId: string): number;
}

export function createSeenUrlsTable(db: Database): SeenUrlsTable {
  // Rows are numbered as URLs are first seen: a run's results find theirs side by side.
  const upsert = db
    .prepare<[string, string, number, number, string, string], number>(
      `INSERT INTO seen_urls (pipeline_name, url, first_seen_at, last_seen_at, first_run_id, last_run_id)
     VALUES (?, ?, ?, ?, ?, ?)
     ON CONFLICT (pipeline_name, url) DO UPDATE SET
       first_run_id = CASE WHEN excluded.first_seen_at < first_seen_at
                           THEN excluded.first_run_id ELSE first_run_id END,
       first_seen_at = MIN(first_seen_at, excluded.first_seen_at),
       last_run_id = CASE WHEN excluded.last_seen_at >= last_seen_at
                          THEN excluded.last_run_id ELSE last_run_id END,
       last_seen_at = MAX(last_seen_at, excluded.last_seen_at)
     RETURNING id`,
    )
    .pluck();
  const one = db.prepare<[string, string], SeenUrlRow>(
    `SELECT pipeline_name AS pipelineName, url, first_seen_at AS firstSeenAt,
            last_seen_at AS lastSeenAt, first_run_id AS firstRunId, last_run_id AS lastRunId
     FROM seen_urls WHERE pipeline_name = ? AND url = ?`,
  );
  const firstIn = db
    .prepare<[string], number>('SELECT COUNT(*) FROM seen_urls WHERE first_run_id = ?')
    .pluck();

  return {
    touch: (pipelineName, url, at, runId) => upsert.get(pipelineName, url, at, at, runId, runId)!,
    get: (pipelineName, url) => one.get(pipelineName, url),
    countFirstSeenIn: (runId) => firstIn.get(runId) ?? 0,
  };
}
