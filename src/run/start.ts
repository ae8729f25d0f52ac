/**
 * Starting and resuming runs. A run's tasks are rows in SQLite before they are jobs in Redis,
 * so a Redis that lost everything costs a resume, not a run.
 */
import { createHash } from 'node:crypto';
import { estimateSearchCredits, type SearchRequest } from '../contract/index.ts';
import { HarvestError } from '../errors.ts';
import type { Logger } from '../log.ts';
import { formatIssue, type Pipeline, parsePipeline, planTasks } from '../pipeline/index.ts';
import { readPipelineText } from '../pipeline/load.ts';
import { Budget } from '../queue/budget.ts';
import { enqueueSearches, removeFailedJobs } from '../queue/enqueue.ts';
import type { SearchJobData } from '../queue/job-data.ts';
import { newRunId } from '../queue/names.ts';
import { RateController } from '../queue/rate-controller.ts';
import type { RunTrigger } from '../store/runs.ts';
import type { Runtime } from './runtime.ts';

/** Attempts per task when the pipeline does not say. */
export const DEFAULT_MAX_ATTEMPTS = 5;

export interface StartedRun {
  runId: string;
  pipeline: Pipeline;
  taskCount: number;
  warnings: string[];
  estimate: { min: number; max: number };
}

export interface LoadedPipeline {
  pipeline: Pipeline;
  text: string;
  warnings: string[];
}

/** Reads and validates a pipeline file; every problem is in the error, with its position. */
export async function loadValidPipeline(file: string): Promise<LoadedPipeline> {
  const read = await readPipelineText(file);
  const result = read.ok ? parsePipeline(read.text, file) : read;
  if (!read.ok || !result.ok) {
    const issues = result.ok ? [] : result.issues;
    throw new HarvestError(
      'PIPELINE_INVALID',
      `${file} is not a valid pipeline:\n${issues.map((i) => `  ${formatIssue(i)}`).join('\n')}`,
      { exitCode: 2 },
    );
  }
  return {
    pipeline: result.value,
    text: read.text,
    warnings: result.warnings.map((w) => formatIssue(w)),
  };
}

export async function startRun(
  runtime: Runtime,
  source: string | LoadedPipeline,
  options: { trigger?: RunTrigger; logger: Logger; nowMs?: number },
): Promise<StartedRun> {
  const { pipeline, text, warnings } =
    typeof source === 'string' ? await loadValidPipeline(source) : source;
  const { store } = runtime;
  const runId = newRunId(options.nowMs ?? Date.now());
  // The plan lives only until its tasks are rows: jobs are enqueued from SQLite, page by page,
  // exactly as a resume does, so a large run is not held in memory twice.
  const { taskCount, estimate } = recordPlan(runtime, runId, pipeline, text, options.trigger);
  await new RateController(
    runtime.redis,
    runtime.keys.rate,
    runtime.searchQueue,
    options.logger,
  ).start(pipeline.run?.rateLimitPerMinute);
  // Running from its first job on: a local pool may finish tasks before enqueuing ends.
  store.runs.setStatus(runId, 'running');
  await enqueueTasks(runtime, runId, pipeline, unfinishedTasks(runtime, runId));
  options.logger.info({ runId, tasks: taskCount }, 'run started');
  return { runId, pipeline, taskCount, warnings, estimate };
}

/**
 * Writes the run and its tasks. The plan is streamed into SQLite as it is computed (one
 * transaction), so memory does not grow with the number of tasks; the run's task count is set
 * once they are written.
 */
function recordPlan(
  runtime: Runtime,
  runId: string,
  pipeline: Pipeline,
  text: string,
  trigger: RunTrigger = 'manual',
): { taskCount: number; estimate: { min: number; max: number } } {
  const { store } = runtime;
  const pipelineId = store.pipelines.upsert({
    name: pipeline.name,
    hash: createHash('sha256').update(text).digest('hex'),
    yamlText: text,
  });
  store.runs.create({
    id: runId,
    pipelineId,
    trigger,
    maxCredits: pipeline.budget?.maxCredits ?? null,
    taskCount: 0,
  });
  const tasks = planTasks(pipeline);
  try {
    store.tasks.insertMany(runId, tasks);
  } catch (error) {
    // The transaction wrote no task: the run is over before it began.
    store.runs.setStatus(runId, 'failed');
    throw error;
  }
  store.runs.setTaskCount(runId, tasks.taskCount);
  const estimate = tasks.estimate();
  return {
    taskCount: tasks.taskCount,
    estimate: { min: estimate.minCredits, max: estimate.maxCredits },
  };
}

function unfinishedTasks(
  runtime: Runtime,
  runId: string,
): Iterable<{ key: string; request: SearchRequest }> {
  return runtime.store.tasks.unfinished(runId) as Iterable<{ key: string; request: SearchRequest }>;
}

/**
 * Resumes a run: un-pauses the search queue, raises the budget counter to what SQLite says was
 * spent (a Redis that lost it starts again from there), and re-enqueues every task that has
 * not ended. Jobs still in Redis are left as they are (job ids are derived from run id and task
 * key, so adding them again is harmless); the run's failed jobs are removed first, so that
 * their ids are free again.
 */
export async function resumeRun(
  runtime: Runtime,
  runId: string,
  options: { logger: Logger },
): Promise<{ runId: string; requeued: number }> {
  const { store } = runtime;
  const run = store.runs.get(runId);
  if (!run)
    throw new HarvestError('RUN_NOT_FOUND', `no run ${runId} in ${runtime.settings.dbPath}`, {
      exitCode: 2,
    });
  const pipelineRow = store.pipelines.get(run.pipelineId);
  if (!pipelineRow)
    throw new HarvestError('PIPELINE_NOT_FOUND', `run ${runId} has no pipeline row`);
  if (await runtime.searchQueue.isPaused()) {
    await runtime.searchQueue.resume();
    await runtime.redis.del(runtime.keys.pausedReason);
  }
  const spent = store.calls.totals(runId).creditsUsed;
  await new Budget(runtime.redis, runtime.keys.budget).raiseTo(runId, spent);
  const { pipeline } = parseStoredPipeline(pipelineRow.yamlText, pipelineRow.name);
  // A failed job keeps its id taken; SQLite, not Redis, says which tasks are unfinished.
  await removeFailedJobs(runtime.searchQueue, runId);
  store.runs.setStatus(runId, 'running');
  const requeued = await enqueueTasks(runtime, runId, pipeline, unfinishedTasks(runtime, runId));
  // Nothing was left to run (or it all ended meanwhile): nobody else would finish the run.
  store.runs.finishIfDone(runId);
  options.logger.info({ runId, requeued }, 'run resumed');
  return { runId, requeued };
}

function parseStoredPipeline(text: string, name: string): { pipeline: Pipeline } {
  const result = parsePipeline(text, `${name}.yaml (stored)`);
  if (!result.ok) {
    throw new HarvestError('PIPELINE_INVALID', `the stored pipeline ${name} no longer validates`);
  }
  return { pipeline: result.value };
}

async function enqueueTasks(
  runtime: Runtime,
  runId: string,
  pipeline: Pipeline,
  tasks: Iterable<{ key: string; request: SearchRequest }>,
): Promise<number> {
  const maxAttempts = pipeline.run?.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
  const maxCredits = pipeline.budget?.maxCredits;
  function* jobs(): Generator<SearchJobData> {
    for (const t of tasks) {
      yield {
        runId,
        taskKey: t.key,
        request: t.request,
        maxAttempts,
        ...(maxCredits === undefined ? {} : { maxCredits }),
        estimateMaxCredits: estimateSearchCredits(t.request).max,
      };
    }
  }
  return enqueueSearches(runtime.searchQueue, jobs());
}
