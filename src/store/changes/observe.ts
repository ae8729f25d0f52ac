/**
 * What classification reads of a run's results: each row's key, URL and content hash, written
 * with the row (`results.change_hash`, ./content-hash.ts), so no content is read or decoded.
 */
import type { ResultsTable } from '../results.ts';
import type { Observation } from './classify.ts';

/**
 * The results of `runId` that have a URL, with their search and content hash. `searchKeyOf`:
 * the search key of each of the run's tasks (results of an unknown task are left out).
 */
export function observeRun(
  results: Pick<ResultsTable, 'changeRows'>,
  runId: string,
  searchKeyOf: ReadonlyMap<string, string>,
): Observation[] {
  const observed: Observation[] = [];
  for (const row of results.changeRows(runId)) {
    const searchKey = searchKeyOf.get(row.taskKey);
    if (row.url === null || searchKey === undefined) continue;
    observed.push({
      taskKey: row.taskKey,
      source: row.source,
      position: row.position,
      url: row.url,
      searchKey,
      contentHash: row.changeHash,
    });
  }
  return observed;
}

/** The markdown of one stored result; null when it has none or the row is gone. */
export function markdownAt(
  results: Pick<ResultsTable, 'forTask'>,
  at: { runId: string; taskKey: string; source: string; position: number },
): string | null {
  const row = results
    .forTask(at.runId, at.taskKey)
    .find((r) => r.source === at.source && r.position === at.position);
  return row?.markdown ?? null;
}
