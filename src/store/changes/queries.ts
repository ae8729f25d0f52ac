/**
 * Reading what changed in a run: per search counts and the changed results, from the recorded
 * rows (./record.ts) against the run's own baseline, or computed from the recorded hashes and
 * positions of any two runs (`--since-run`). Either way no content is read.
 */
import type { Database } from 'better-sqlite3';
import {
  CHANGE_COUNT_NAMES,
  type ChangeCounts,
  type ChangeStatus,
  classify,
  emptyCounts,
} from './classify.ts';
import type { ChangeRecorder } from './record.ts';
import { searchKey, searchLabel } from './search-key.ts';

export type ListedStatus = ChangeStatus | 'dropped';

/** A result that is new, changed, moved or dropped (or same, when asked for all). */
export interface ChangedResult {
  searchKey: string;
  source: string;
  status: ListedStatus;
  url: string;
  title: string | null;
  /** 0-based position in this run; null when dropped. */
  position: number | null;
  /** 0-based position in the baseline; null when new. */
  previousPosition: number | null;
  contentHash: string | null;
  previousHash: string | null;
  /** This run's task of the result (the baseline's when dropped). */
  taskKey: string;
}

export interface SearchChanges extends ChangeCounts {
  searchKey: string;
  /** Entry id, query and the fields a matrix varies. */
  label: string;
  /** Credits of this run's calls for the search (its tasks). */
  credits: number;
}

export interface RunChangeReport {
  runId: string;
  baselineRunId: string | null;
  totals: ChangeCounts;
  searches: SearchChanges[];
  /** Changed results: new, changed, dropped, and same ones that moved (all with `all`). */
  results: ChangedResult[];
}

/** Whether a row belongs in the list of changes. */
export function isListed(r: Pick<ChangedResult, 'status' | 'position' | 'previousPosition'>) {
  return r.status !== 'same' || r.position !== r.previousPosition;
}

const RESULTS = `SELECT c.search_key AS searchKey, c.source, c.status, r.url, r.title, c.position,
    c.previous_position AS previousPosition, c.content_hash AS contentHash,
    c.previous_hash AS previousHash, c.task_key AS taskKey
  FROM result_changes c
    JOIN results r ON r.run_id = c.run_id AND r.task_key = c.task_key
      AND r.source = c.source AND r.position = c.position
  WHERE c.run_id = ?`;
const ORDER = 'ORDER BY c.search_key, c.source, c.position';

function prepare(db: Database) {
  return {
    tasks: db.prepare<
      [string],
      { taskKey: string; requestJson: string; entry: string | null; credits: number }
    >(
      `SELECT task_key AS taskKey, request_json AS requestJson, search_id AS entry,
         credits_used AS credits FROM tasks WHERE run_id = ?`,
    ),
    results: db.prepare<[string], ChangedResult>(`${RESULTS} ${ORDER}`),
    listed: db.prepare<[string], ChangedResult>(
      `${RESULTS} AND (c.status <> 'same' OR c.position <> c.previous_position) ${ORDER}`,
    ),
    searchCounts: db.prepare<[string], SearchCounts>(
      `SELECT search_key AS searchKey, COUNT(*) AS results,
         COALESCE(SUM(status = 'new'), 0) AS new, COALESCE(SUM(status = 'same'), 0) AS same,
         COALESCE(SUM(status = 'changed'), 0) AS changed, 0 AS dropped,
         COALESCE(SUM(position < previous_position), 0) AS movedUp,
         COALESCE(SUM(position > previous_position), 0) AS movedDown
       FROM result_changes WHERE run_id = ? GROUP BY search_key`,
    ),
    droppedCounts: db.prepare<[string], SearchCounts>(
      `SELECT search_key AS searchKey, 0 AS results, 0 AS new, 0 AS same, 0 AS changed,
         COUNT(*) AS dropped, 0 AS movedUp, 0 AS movedDown
       FROM dropped_results WHERE run_id = ? GROUP BY search_key`,
    ),
    dropped: db.prepare<[string, string], ChangedResult>(
      `SELECT d.search_key AS searchKey, d.source, 'dropped' AS status, d.url, r.title,
         NULL AS position, d.previous_position AS previousPosition, NULL AS contentHash,
         d.previous_hash AS previousHash, d.previous_task_key AS taskKey
       FROM dropped_results d
         LEFT JOIN results r ON r.run_id = ? AND r.task_key = d.previous_task_key
           AND r.source = d.source AND r.position = d.previous_position
       WHERE d.run_id = ?
       ORDER BY d.search_key, d.source, d.previous_position`,
    ),
    titles: db.prepare<
      [string],
      { taskKey: string; source: string; position: number; title: string | null }
    >(
      'SELECT task_key AS taskKey, source, position, title FROM results WHERE run_id = ? AND url IS NOT NULL',
    ),
  };
}

type Statements = ReturnType<typeof prepare>;

/**
 * Labels and credits of the searches of the run's tasks; the baseline's tasks are read only
 * when a search of `counted` has no task in the run (its results all dropped).
 */
function searchInfo(
  s: Statements,
  runId: string,
  baselineRunId: string | null,
  counted: readonly SearchCounts[],
) {
  const labels = new Map<string, string>();
  const credits = new Map<string, number>();
  for (const t of s.tasks.iterate(runId)) {
    const key = searchKey(t.requestJson, t.entry);
    if (!labels.has(key)) labels.set(key, searchLabel(t.requestJson, t.entry));
    credits.set(key, (credits.get(key) ?? 0) + t.credits);
  }
  if (baselineRunId !== null && counted.some((c) => !labels.has(c.searchKey))) {
    for (const t of s.tasks.iterate(baselineRunId)) {
      const key = searchKey(t.requestJson, t.entry);
      if (!labels.has(key)) labels.set(key, searchLabel(t.requestJson, t.entry));
    }
  }
  return { labels, credits };
}

type SearchCounts = ChangeCounts & { searchKey: string };

/** What one row adds to its search's counts. */
function countsOfRow(r: ChangedResult): SearchCounts {
  const counts: SearchCounts = { searchKey: r.searchKey, ...emptyCounts() };
  if (r.status !== 'dropped') counts.results = 1;
  counts[r.status] = 1;
  if (r.position !== null && r.previousPosition !== null) {
    counts.movedUp = r.position < r.previousPosition ? 1 : 0;
    counts.movedDown = r.position > r.previousPosition ? 1 : 0;
  }
  return counts;
}

/** Per search counts and totals: every search of the runs, with the counts given added. */
function tally(given: Iterable<SearchCounts>, info: ReturnType<typeof searchInfo>) {
  const bySearch = new Map<string, SearchChanges>();
  for (const key of info.credits.keys()) bySearch.set(key, searchRow(key, info));
  const totals = emptyCounts();
  for (const c of given) {
    let search = bySearch.get(c.searchKey);
    if (search === undefined) {
      search = searchRow(c.searchKey, info);
      bySearch.set(c.searchKey, search);
    }
    for (const name of CHANGE_COUNT_NAMES) {
      search[name] += c[name];
      totals[name] += c[name];
    }
  }
  const searches = [...bySearch.values()].sort((a, b) => a.label.localeCompare(b.label));
  return { totals, searches };
}

function searchRow(key: string, info: ReturnType<typeof searchInfo>): SearchChanges {
  return {
    searchKey: key,
    label: info.labels.get(key) ?? key,
    credits: info.credits.get(key) ?? 0,
    ...emptyCounts(),
  };
}

export interface ChangeReader {
  /**
   * What changed in `runId` since `sinceRunId` (default: its recorded baseline). Both runs are
   * recorded first when they are not (writes). Undefined when `runId` is unknown or unfinished.
   */
  report(
    runId: string,
    options?: { sinceRunId?: string; all?: boolean },
  ): RunChangeReport | undefined;
}

export function createChangeReader(db: Database, recorder: ChangeRecorder): ChangeReader {
  const s = prepare(db);
  return {
    report(runId, options = {}) {
      const recorded = recorder.ensure(runId);
      if (recorded === undefined) return undefined;
      const since = options.sinceRunId;
      const baselineRunId = since ?? recorded.baselineRunId;
      if (since === undefined || since === recorded.baselineRunId) {
        // Counted in SQL; only the listed rows are read (all with `all`).
        const counts = [...s.searchCounts.iterate(runId), ...s.droppedCounts.iterate(runId)];
        const info = searchInfo(s, runId, baselineRunId, counts);
        const { totals, searches } = tally(counts, info);
        const results = storedRows(s, runId, baselineRunId, options.all ?? false);
        return { runId, baselineRunId, totals, searches, results };
      }
      const rows = comparedRows(s, recorder, runId, since);
      const counts = rows.map(countsOfRow);
      const { totals, searches } = tally(counts, searchInfo(s, runId, since, counts));
      const results = options.all ? rows : rows.filter(isListed);
      return { runId, baselineRunId, totals, searches, results };
    },
  };
}

function storedRows(
  s: Statements,
  runId: string,
  baselineRunId: string | null,
  all: boolean,
): ChangedResult[] {
  const rows = (all ? s.results : s.listed).all(runId);
  if (baselineRunId !== null) for (const d of s.dropped.iterate(baselineRunId, runId)) rows.push(d);
  return rows;
}

/** `runId` classified against any recorded run, in memory, from the recorded observations. */
function comparedRows(
  s: Statements,
  recorder: ChangeRecorder,
  runId: string,
  sinceRunId: string,
): ChangedResult[] {
  if (recorder.ensure(sinceRunId) === undefined) {
    throw new Error(`run ${sinceRunId} is unknown or has not finished`);
  }
  const current = recorder.observations(runId);
  const before = recorder.observations(sinceRunId);
  const { answered } = recorder.searchesOf(runId);
  const c = classify(runId, current, before, answered);
  const urls = new Map(
    current.map((o) => [`${o.taskKey}\u0000${o.source}\u0000${o.position}`, o.url]),
  );
  const titles = titlesOf(s, runId);
  const rows: ChangedResult[] = c.results.map((r) => {
    const at = `${r.taskKey}\u0000${r.source}\u0000${r.position}`;
    return {
      searchKey: r.searchKey,
      source: r.source,
      status: r.status,
      url: urls.get(at) ?? '',
      title: titles.get(at) ?? null,
      position: r.position,
      previousPosition: r.previousPosition,
      contentHash: r.contentHash,
      previousHash: r.previousHash,
      taskKey: r.taskKey,
    };
  });
  const oldTitles = titlesOf(s, sinceRunId);
  for (const d of c.dropped) {
    rows.push({
      searchKey: d.searchKey,
      source: d.source,
      status: 'dropped',
      url: d.url,
      title:
        oldTitles.get(`${d.previousTaskKey}\u0000${d.source}\u0000${d.previousPosition}`) ?? null,
      position: null,
      previousPosition: d.previousPosition,
      contentHash: null,
      previousHash: d.previousHash,
      taskKey: d.previousTaskKey,
    });
  }
  return rows;
}

function titlesOf(s: Statements, runId: string): Map<string, string | null> {
  const titles = new Map<string, string | null>();
  for (const r of s.titles.iterate(runId)) {
    titles.set(`${r.taskKey}\u0000${r.source}\u0000${r.position}`, r.title);
  }
  return titles;
}
