/**
 * Results over time: every run's position and content hash of one URL, or of one query's top
 * results, and the ranks of chosen searches' top results over a list of runs (the HTML report's
 * charts). Read from result rows, with the recorded hashes where a run was recorded.
 */
import type { Database } from 'better-sqlite3';
import { searchKey, searchLabel } from './search-key.ts';

export interface HistoryPoint {
  runId: string;
  /** When the run was created, ms since the epoch. */
  runCreatedAt: number;
  runStatus: string;
  pipeline: string;
  /** Entry id, query and the fields a matrix varies. */
  search: string;
  searchKey: string;
  source: string;
  url: string;
  title: string | null;
  /** 0-based position within its source. */
  position: number;
  /** Null when the run's changes were not recorded. */
  contentHash: string | null;
  status: string | null;
}

export interface RankSeries {
  searchKey: string;
  url: string;
  /** 0-based position per run (in the order of the runs asked for); null when absent. */
  positions: (number | null)[];
}

export interface HistoryFilter {
  pipelineName?: string;
  /** With `query`: only positions below this (default 10). */
  top?: number;
}

const SELECT = `SELECT r.run_id AS runId, ru.created_at AS runCreatedAt, ru.status AS runStatus,
    p.name AS pipeline, t.request_json AS requestJson, t.search_id AS entry, r.source, r.url,
    r.title, r.position, c.content_hash AS contentHash, c.status
  FROM results r
    JOIN runs ru ON ru.id = r.run_id
    JOIN pipelines p ON p.id = ru.pipeline_id
    JOIN tasks t ON t.run_id = r.run_id AND t.task_key = r.task_key
    LEFT JOIN result_changes c ON c.run_id = r.run_id AND c.task_key = r.task_key
      AND c.source = r.source AND c.position = r.position`;
const PIPELINE = '(@pipeline IS NULL OR p.name = @pipeline)';
const ORDER = 'ORDER BY ru.created_at, ru.rowid, r.task_key, r.source, r.position';

type Row = Omit<HistoryPoint, 'search' | 'searchKey'> & {
  requestJson: string;
  entry: string | null;
};

export interface ChangeHistory {
  byUrl(url: string, filter?: HistoryFilter): HistoryPoint[];
  byQuery(query: string, filter?: HistoryFilter): HistoryPoint[];
  /** Positions over `runIds` of the URLs in the top `top` of each search in the last run. */
  ranks(runIds: readonly string[], searchKeys: ReadonlySet<string>, top: number): RankSeries[];
}

export function createChangeHistory(db: Database): ChangeHistory {
  const byUrl = db.prepare<{ url: string; pipeline: string | null }, Row>(
    `${SELECT} WHERE r.url = @url AND ${PIPELINE} ${ORDER}`,
  );
  const byQuery = db.prepare<{ query: string; pipeline: string | null; top: number }, Row>(
    `${SELECT} WHERE json_extract(t.request_json, '$.query') = @query AND r.position < @top
       AND r.url IS NOT NULL AND ${PIPELINE} ${ORDER}`,
  );
  const ofRun = db.prepare<[string, number], { searchKey: string; url: string; position: number }>(
    `SELECT c.search_key AS searchKey, r.url, c.position
     FROM result_changes c
       JOIN results r ON r.run_id = c.run_id AND r.task_key = c.task_key
         AND r.source = c.source AND r.position = c.position
     WHERE c.run_id = ? AND c.position < ?`,
  );
  const labelled = (rows: Row[]): HistoryPoint[] =>
    rows.map(({ requestJson, entry, ...rest }) => ({
      ...rest,
      search: searchLabel(requestJson, entry),
      searchKey: searchKey(requestJson, entry),
    }));
  return {
    byUrl: (url, f = {}) => labelled(byUrl.all({ url, pipeline: f.pipelineName ?? null })),
    byQuery: (query, f = {}) =>
      labelled(byQuery.all({ query, pipeline: f.pipelineName ?? null, top: f.top ?? 10 })),
    ranks(runIds, searchKeys, top) {
      const series = new Map<string, RankSeries>();
      const last = runIds.length - 1;
      for (let i = last; i >= 0; i--) {
        for (const row of ofRun.iterate(runIds[i]!, i === last ? top : 1_000_000)) {
          if (!searchKeys.has(row.searchKey)) continue;
          const key = `${row.searchKey}\u0000${row.url}`;
          let s = series.get(key);
          if (s === undefined) {
            if (i !== last) continue;
            s = { searchKey: row.searchKey, url: row.url, positions: runIds.map(() => null) };
            series.set(key, s);
          }
          s.positions[i] = row.position;
        }
      }
      return [...series.values()];
    },
  };
}
