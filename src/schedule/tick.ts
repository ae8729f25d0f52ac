/**
 * One tick of a pipeline's schedule: start a run with trigger `schedule`, unless the pipeline's
 * previous run is still going (the tick is then recorded as skipped, never stacked). Which of
 * the two, and the run's id, is decided in SQLite first (src/store/schedule-ticks.ts), so a tick
 * job redelivered after its worker died goes on with the run it had planned.
 */
import type { Logger } from '../log.ts';
import { formatIssue, type Pipeline, parsePipeline } from '../pipeline/index.ts';
import type { TickJobData } from '../queue/job-data.ts';
import { newRunId } from '../queue/names.ts';
import { retentionDue } from '../run/prune/retention.ts';
import { requeueUnfinished } from '../run/resume.ts';
import type { Runtime } from '../run/runtime.ts';
import { startRun } from '../run/start.ts';
import type { TickRow } from '../store/index.ts';

export interface TickOptions {
  logger: Logger;
  nowMs?: number;
  /** Why this tick may start no run (its schedule is gone): recorded as skipped, saying so. */
  unscheduled?: string;
}

/** Handles the tick due at `dueAt` and returns what was recorded of it. */
export async function runTick(
  runtime: Runtime,
  data: TickJobData,
  dueAt: number,
  options: TickOptions,
): Promise<TickRow> {
  const { store } = runtime;
  const name = data.pipelineName;
  const log = options.logger.child({ pipeline: name, dueAt });
  const claim = store.ticks.claim({
    pipelineName: name,
    dueAt,
    pipelineHash: data.pipelineHash,
    runId: newRunId(options.nowMs ?? Date.now()),
    ...(options.unscheduled ? { unscheduled: options.unscheduled } : {}),
  });
  if (claim.kind === 'skipped') log.warn({ reason: claim.tick.reason }, 'scheduled run skipped');
  if (claim.kind !== 'claimed') return claim.tick;

  const runId = claim.tick.runId as string;
  const parsed = parsePipeline(data.yamlText, `${data.file ?? name} (scheduled)`);
  if (!parsed.ok) {
    const issues = parsed.issues.map((i) => formatIssue(i)).join('; ');
    return fail(runtime, name, dueAt, `the scheduled pipeline no longer validates: ${issues}`);
  }
  const pipeline = parsed.value;
  const notify = pipeline.schedule?.notify;
  const recorded = claim.redelivered ? store.runs.get(runId) : undefined;
  if (recorded) {
    // An earlier attempt recorded the run, then its worker died.
    if (store.tasks.counts(runId).total === 0) {
      store.runs.setStatus(runId, 'failed');
      return fail(runtime, name, dueAt, `the worker stopped while planning run ${runId}`);
    }
    if (notify) store.notifications.ensure(runId, notify);
    keepRetention(runtime, runId, pipeline);
    await requeueUnfinished(runtime, runId, pipeline);
  } else {
    await startScheduledRun(runtime, pipeline, data.yamlText, runId, notify, log);
  }
  store.ticks.finish(name, dueAt, 'started');
  log.info({ runId, lateMs: Date.now() - dueAt }, 'scheduled run started');
  return store.ticks.get(name, dueAt) as TickRow;
}

async function startScheduledRun(
  runtime: Runtime,
  pipeline: Pipeline,
  text: string,
  runId: string,
  notify: string | undefined,
  log: Logger,
): Promise<void> {
  await startRun(
    runtime,
    { pipeline, text, warnings: [] },
    {
      trigger: 'schedule',
      runId,
      logger: log,
      // Before any job is enqueued, so before the run can finish.
      onRecorded: (id) => {
        if (notify) runtime.store.notifications.ensure(id, notify);
        keepRetention(runtime, id, pipeline);
      },
    },
  );
}

/** Records the pipeline's `retention`, applied by the runs role once the run has finished. */
function keepRetention(runtime: Runtime, runId: string, pipeline: Pipeline): void {
  if (!pipeline.retention) return;
  runtime.store.prune.ensureRetention(
    retentionDue(runId, pipeline.name, pipeline.retention),
    Date.now(),
  );
}

/** Records a tick as failed (also when its job has used up its attempts). */
export function fail(runtime: Runtime, name: string, dueAt: number, reason: string): TickRow {
  runtime.store.ticks.finish(name, dueAt, 'failed', reason);
  return runtime.store.ticks.get(name, dueAt) as TickRow;
}
