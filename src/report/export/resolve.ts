/**
 * Turns export flags into a store filter, checking them against the store: an unknown run or
 * pipeline, or a flag that does not apply to the kind of rows, is bad input (exit 2).
 */
import { HarvestError, UsageError } from '../../errors.ts';
import type { ExportFilter, ExportKind, ResultSource, RunRow, Store } from '../../store/index.ts';

/** Which rows of the store an export reads. */
export interface RunFilterInput {
  kind: ExportKind;
  runId?: string;
  pipelineName?: string;
  /** Lower bound on the rows' time, ms since the epoch. */
  sinceMs?: number;
  /** Results only: URLs the pipeline had not seen before `sinceRunId` (default: the latest run). */
  onlyNew?: boolean;
  sinceRunId?: string;
  source?: ResultSource;
  uniqueUrls?: boolean;
  /** Results only: those new or changed since their run's previous completed run. */
  onlyChanged?: boolean;
}

function notFound(code: string, message: string): HarvestError {
  return new HarvestError(code, message, { exitCode: 2 });
}

function checkFlags(input: RunFilterInput): void {
  if (input.runId !== undefined && input.pipelineName !== undefined) {
    throw new UsageError('--run and --pipeline cannot be combined: a run has one pipeline');
  }
  if (input.sinceRunId !== undefined && !input.onlyNew) {
    throw new UsageError('--since-run goes with --only-new');
  }
  if (input.kind !== 'results') {
    const resultsOnly = [
      input.onlyNew && '--only-new',
      input.source !== undefined && '--source',
      input.uniqueUrls && '--unique-urls',
      input.onlyChanged && '--only-changed',
    ].filter(Boolean);
    if (resultsOnly.length > 0) {
      throw new UsageError(`${resultsOnly.join(', ')} applies to --of results only`);
    }
  }
}

function getRun(store: Store, runId: string): RunRow {
  const run = store.runs.get(runId);
  if (!run) throw notFound('RUN_NOT_FOUND', `no run ${runId} in ${store.path}`);
  return run;
}

/** The run `--only-new` counts from: `--since-run`, else `--run`, else the latest run. */
function sinceRunOf(store: Store, input: RunFilterInput): RunRow {
  if (input.sinceRunId !== undefined) return getRun(store, input.sinceRunId);
  if (input.runId !== undefined) return getRun(store, input.runId);
  const latest =
    input.pipelineName === undefined
      ? store.runs.latest()
      : store.runs.list({ pipelineName: input.pipelineName, limit: 1 })[0];
  if (!latest) throw notFound('RUN_NOT_FOUND', `--only-new: no runs in ${store.path}`);
  return latest;
}

export function resolveRunFilter(store: Store, input: RunFilterInput): ExportFilter {
  checkFlags(input);
  const run = input.runId === undefined ? undefined : getRun(store, input.runId);
  if (
    input.pipelineName !== undefined &&
    store.pipelines.latestByName(input.pipelineName) === undefined
  ) {
    throw notFound('PIPELINE_NOT_FOUND', `no pipeline ${input.pipelineName} in ${store.path}`);
  }
  const filter: ExportFilter = { kind: input.kind };
  if (input.runId !== undefined) filter.runId = input.runId;
  if (input.pipelineName !== undefined) filter.pipelineName = input.pipelineName;
  if (input.sinceMs !== undefined) filter.sinceMs = input.sinceMs;
  if (input.source !== undefined) filter.source = input.source;
  if (input.uniqueUrls) filter.uniqueUrls = true;
  if (input.onlyChanged) filter.onlyChanged = true;
  if (!input.onlyNew) return filter;

  const since = sinceRunOf(store, input);
  // URLs new since a run of another pipeline: no row can be, so say so rather than export none.
  const pipelineName = input.pipelineName ?? run?.pipelineName;
  if (pipelineName !== undefined && since.pipelineName !== pipelineName) {
    const of = run === undefined ? '' : ` (that of run ${run.id})`;
    throw new UsageError(
      `--since-run ${since.id} belongs to pipeline ${since.pipelineName}, not ${pipelineName}${of}`,
    );
  }
  filter.newSince = { id: since.id, createdAt: since.createdAt, pipelineName: since.pipelineName };
  return filter;
}
