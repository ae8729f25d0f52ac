/** What changed between runs of a pipeline: recording, reading, history. */
import type { Database } from 'better-sqlite3';
import type { Clock } from '../clock.ts';
import type { ResultsTable } from '../results.ts';
import type { RunsTable } from '../runs.ts';
import { type ChangeHistory, createChangeHistory } from './history.ts';
import { markdownAt } from './observe.ts';
import { type ChangeReader, createChangeReader } from './queries.ts';
import { type ChangeRecorder, createChangeRecorder } from './record.ts';

export interface ChangeContent {
  /** The markdown of one stored result (./observe.ts, where result content is read). */
  markdownAt(at: {
    runId: string;
    taskKey: string;
    source: string;
    position: number;
  }): string | null;
}

export type Changes = ChangeRecorder & ChangeReader & ChangeHistory & ChangeContent;

export function createChanges(
  db: Database,
  t: {
    runs: Pick<RunsTable, 'get'>;
    results: Pick<ResultsTable, 'changeRows' | 'forTask' | 'count'>;
  },
  now: Clock,
): Changes {
  const recorder = createChangeRecorder(db, t, now);
  return {
    ...recorder,
    ...createChangeReader(db, recorder),
    ...createChangeHistory(db),
    markdownAt: (at) => markdownAt(t.results, at),
  };
}

export * from './classify.ts';
export { CONTENT_FIELDS, contentHash } from './content-hash.ts';
export type { HistoryFilter, HistoryPoint, RankSeries } from './history.ts';
export type { ChangedResult, ListedStatus, RunChangeReport, SearchChanges } from './queries.ts';
export { isListed } from './queries.ts';
export type { RunChanges } from './record.ts';
export { searchKey, searchLabel } from './search-key.ts';
