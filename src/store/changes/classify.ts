/**
 * Classifying a run's results against a baseline run (pure): per search and source, each URL of
 * this run is `new` (the baseline's same search did not have it), `same` (it did, with the same
 * content hash) or `changed` (it did, with another); each URL the baseline had and this run's
 * same search has not is `dropped`. Positions are kept on both sides, so a move up or down is
 * read from them. A search this run did not answer (its task failed) drops nothing: no answer
 * is not an empty answer. A URL twice in one search counts once, at its best position.
 */

export const CHANGE_STATUSES = ['new', 'same', 'changed'] as const;
export type ChangeStatus = (typeof CHANGE_STATUSES)[number];

/** One result of a run, as classification sees it. */
export interface Observation {
  taskKey: string;
  source: string;
  position: number;
  url: string;
  searchKey: string;
  contentHash: string;
}

/** A result of the baseline, with the run its content last changed in. */
export interface BaselineObservation extends Observation {
  /** Run in which the URL entered the search or its content last changed; null when unknown. */
  lastChangedRun: string | null;
}

export interface ClassifiedResult {
  taskKey: string;
  source: string;
  position: number;
  url: string;
  searchKey: string;
  status: ChangeStatus;
  contentHash: string;
  previousPosition: number | null;
  previousHash: string | null;
  lastChangedRun: string;
}

export interface DroppedResult {
  searchKey: string;
  source: string;
  url: string;
  previousTaskKey: string;
  previousPosition: number;
  previousHash: string;
}

/** The counts of a run's changes, in the order reports show them. */
export const CHANGE_COUNT_NAMES = [
  'results',
  'new',
  'same',
  'changed',
  'dropped',
  'movedUp',
  'movedDown',
] as const;

export type ChangeCounts = Record<(typeof CHANGE_COUNT_NAMES)[number], number>;

export interface Classification {
  results: ClassifiedResult[];
  dropped: DroppedResult[];
  counts: ChangeCounts;
}

export function emptyCounts(): ChangeCounts {
  return { results: 0, new: 0, same: 0, changed: 0, dropped: 0, movedUp: 0, movedDown: 0 };
}

const keyOf = (o: { searchKey: string; source: string; url: string }) =>
  `${o.searchKey}\u0000${o.source}\u0000${o.url}`;

/** Keeps the best position of each (search, source, URL). */
function bestPositions<T extends Observation>(rows: Iterable<T>): Map<string, T> {
  const best = new Map<string, T>();
  for (const row of rows) {
    const key = keyOf(row);
    const known = best.get(key);
    if (known === undefined || row.position < known.position) best.set(key, row);
  }
  return best;
}

/**
 * `runId`'s results against the baseline's. `answered`: the search keys this run answered
 * (their task done); the baseline's URLs of other searches are not dropped.
 */
export function classify(
  runId: string,
  current: Iterable<Observation>,
  baseline: Iterable<BaselineObservation>,
  answered: ReadonlySet<string>,
): Classification {
  const before = bestPositions(baseline);
  const now = bestPositions(current);
  const counts = emptyCounts();
  const results: ClassifiedResult[] = [];
  for (const [key, row] of now) {
    const prev = before.get(key);
    const status: ChangeStatus =
      prev === undefined ? 'new' : prev.contentHash === row.contentHash ? 'same' : 'changed';
    counts.results += 1;
    counts[status] += 1;
    if (prev !== undefined && row.position < prev.position) counts.movedUp += 1;
    if (prev !== undefined && row.position > prev.position) counts.movedDown += 1;
    results.push({
      taskKey: row.taskKey,
      source: row.source,
      position: row.position,
      url: row.url,
      searchKey: row.searchKey,
      status,
      contentHash: row.contentHash,
      previousPosition: prev?.position ?? null,
      previousHash: prev?.contentHash ?? null,
      lastChangedRun: status === 'same' ? (prev?.lastChangedRun ?? runId) : runId,
    });
  }
  const dropped: DroppedResult[] = [];
  for (const [key, prev] of before) {
    if (now.has(key) || !answered.has(prev.searchKey)) continue;
    counts.dropped += 1;
    dropped.push({
      searchKey: prev.searchKey,
      source: prev.source,
      url: prev.url,
      previousTaskKey: prev.taskKey,
      previousPosition: prev.position,
      previousHash: prev.contentHash,
    });
  }
  return { results, dropped, counts };
}
