/**
 * Events of a run this database lacks are kept all the same, and said once per run: the run
 * was started against another database (`harvest run` and the worker with different HARVEST_DB
 * or HARVEST_DATA_DIR on one queue prefix), and `harvest status` there will not see them.
 * Used wherever a worker commits: the store role's jobs, and a pool's own searches.
 */
import type { Logger } from '../log.ts';

/** Run ids the events name (events are validated by the writer; only the field is read). */
function runIdsOf(events: readonly unknown[]): Set<string> {
  const ids = new Set<string>();
  for (const e of events) {
    const runId = (e as { runId?: unknown } | null)?.runId;
    if (typeof runId === 'string') ids.add(runId);
  }
  return ids;
}

/** A check of events about to be committed, warning once per run the database lacks. */
export function foreignRunWarner(
  hasRun: (runId: string) => boolean,
  dbPath: string | undefined,
  logger: Logger,
): (events: readonly unknown[]) => void {
  /** Runs looked up already: each is looked up, and a foreign one said, once. */
  const checked = new Set<string>();
  return (events) => {
    for (const runId of runIdsOf(events)) {
      if (checked.has(runId)) continue;
      checked.add(runId);
      if (hasRun(runId)) continue;
      logger.warn(
        { runId, db: dbPath },
        `run ${runId} is not in this worker's database: it was started against another one ` +
          '(HARVEST_DB or HARVEST_DATA_DIR differ between `harvest run` and this worker on the same ' +
          'HARVEST_PREFIX); its calls and results are kept here, and `harvest status` there will not see them',
      );
    }
  };
}
