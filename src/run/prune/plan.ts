/**
 * What a prune removes and frees, read from one snapshot of the database: the same figures
 * whether it then removes them or only says so (`--dry-run`).
 */
import { HarvestError } from '../../errors.ts';
import type { MediaFileRef, RunFootprint, Store } from '../../store/index.ts';
import { type RetentionRule, type SkippedRun, selectRuns } from './select.ts';

export interface PruneTotals {
  runs: number;
  calls: number;
  /** Known credits of the calls removed: kept, summed per run, for cost reports. */
  creditsUsed: number;
  results: number;
  media: number;
  /** Saved media files no kept row points at, and their bytes. */
  files: number;
  fileBytes: number;
  /** Stored contents no kept result references, and their (compressed) bytes. */
  contents: number;
  contentBytes: number;
  /** The removed rows' share of their tables' pages (with indexes): an estimate. */
  databaseBytes: number;
}

export interface PrunePlan {
  pipelineName: string;
  rule: RetentionRule;
  /** Runs to prune (those with rows left), newest first. */
  runs: RunFootprint[];
  /** Runs the rule reaches that hold nothing any more. */
  alreadyPruned: number;
  skipped: SkippedRun[];
  kept: number;
  files: MediaFileRef[];
  totals: PruneTotals;
}

/** Tables prune removes rows from, whose bytes it estimates. */
const PRUNED_TABLES = ['results', 'calls', 'media'] as const;

export function planPrune(
  store: Store,
  pipelineName: string,
  rule: RetentionRule,
  nowMs: number,
): PrunePlan {
  return store.snapshot(() => {
    const all = store.prune.runsOf(pipelineName);
    if (all.length === 0) {
      throw new HarvestError(
        'PIPELINE_NO_RUNS',
        `no runs of pipeline "${pipelineName}" in ${store.path}`,
        { exitCode: 2 },
      );
    }
    const selection = selectRuns(all, rule, nowMs);
    const skipped = [...selection.skipped];
    const runs: RunFootprint[] = [];
    let alreadyPruned = 0;
    for (const run of selection.prune) {
      const footprint = store.prune.footprint(run.runId);
      if (footprint.pendingMedia > 0) {
        skipped.push({ runId: run.runId, status: run.status, reason: 'still saving media' });
      } else if (footprint.calls + footprint.results + footprint.media === 0) alreadyPruned++;
      else runs.push(footprint);
    }
    const runIds = runs.map((r) => r.runId);
    const candidates = store.prune.mediaFilesOf(runIds);
    const referenced = store.prune.referencedPaths(
      candidates.map((f) => f.path),
      runIds,
    );
    const files = candidates.filter((f) => !referenced.has(f.path));
    return {
      pipelineName,
      rule,
      runs,
      alreadyPruned,
      skipped,
      kept: selection.kept,
      files,
      totals: totalsOf(store, runs, files),
    };
  });
}

function totalsOf(store: Store, runs: RunFootprint[], files: MediaFileRef[]): PruneTotals {
  const sum = (pick: (r: RunFootprint) => number) => runs.reduce((n, r) => n + pick(r), 0);
  const removed = {
    results: sum((r) => r.results),
    calls: sum((r) => r.calls),
    media: sum((r) => r.media),
  };
  let databaseBytes = 0;
  const contents =
    runs.length > 0 ? store.prune.contentOnlyOf(runs.map((r) => r.runId)) : undefined;
  if (runs.length > 0) {
    const bytes = store.prune.objectBytes();
    const rows = store.prune.tableRows(PRUNED_TABLES);
    for (const table of PRUNED_TABLES) {
      const total = rows.get(table) ?? 0;
      if (total > 0) databaseBytes += ((bytes.get(table) ?? 0) * removed[table]) / total;
    }
  }
  return {
    runs: runs.length,
    ...removed,
    creditsUsed: sum((r) => r.creditsUsed),
    files: files.length,
    fileBytes: files.reduce((n, f) => n + f.bytes, 0),
    contents: contents?.rows ?? 0,
    contentBytes: contents?.bytes ?? 0,
    databaseBytes: Math.round(databaseBytes + (contents?.bytes ?? 0)),
  };
}
