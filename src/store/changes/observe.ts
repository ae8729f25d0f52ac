/**
 * Where classification reads a run's result content: the one function to change when content is
 * stored elsewhere (`observeRun`). It reads rows through the results table's own query
 * (`ResultsTable.iterate`), never the content columns by SQL, and parses `item_json` only for
 * format outputs that have no column of their own.
 */
import type { ResultRow, ResultsTable } from '../results.ts';
import type { Observation } from './classify.ts';
import { contentHash } from './content-hash.ts';

/** Item fields read from `item_json` (the others have columns). */
const ITEM_ONLY = new Set([
  'summary',
  'json',
  'answer',
  'highlights',
  'images',
  'branding',
  'product',
  'menu',
  'imageUrl',
]);

/** A reader of a stored row's item fields, parsing its item at most once, and only if needed. */
function fieldsOf(row: ResultRow): (name: string) => unknown {
  let item: Record<string, unknown> | undefined;
  return (name) => {
    switch (name) {
      case 'markdown':
        return row.markdown;
      case 'html':
        return row.html;
      case 'rawHtml':
        return row.rawHtml;
      case 'links':
        return row.linksJson === null ? null : JSON.parse(row.linksJson);
      case 'title':
        return row.title;
      case 'description':
        return row.description;
      default:
        if (!ITEM_ONLY.has(name) || !row.itemJson.includes(`"${name}"`)) return undefined;
        item ??= JSON.parse(row.itemJson) as Record<string, unknown>;
        return item[name];
    }
  };
}

/**
 * The results of `runId` that have a URL, with their search and content hash. `searchKeyOf`:
 * the search key of each of the run's tasks (results of an unknown task are left out).
 */
export function observeRun(
  results: Pick<ResultsTable, 'iterate'>,
  runId: string,
  searchKeyOf: ReadonlyMap<string, string>,
): Observation[] {
  const observed: Observation[] = [];
  for (const row of results.iterate({ runId })) {
    const searchKey = searchKeyOf.get(row.taskKey);
    if (row.url === null || searchKey === undefined) continue;
    observed.push({
      taskKey: row.taskKey,
      source: row.source,
      position: row.position,
      url: row.url,
      searchKey,
      contentHash: contentHash(fieldsOf(row)),
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
