/**
 * Starting runs. A run's tasks are rows in SQLite before they are jobs in Redis, so a Redis
 * that lost everything costs a resume (resume.ts), not a run.
 */

import { HarvestError } from '../errors.ts';
import type { Logger } from '../log.ts';
import { kindsToSave } from '../media/kinds.ts';
import { mediaRoot } from '../media/storage.ts';
import {
  formatIssue,
  MEDIA_MAX_BYTES_DEFAULT,
  type Pipeline,
  parsePipeline,
  planTasks,
} from '../pipeline/index.ts';
import { pipelineTextHash } from '../pipeline/keys.ts';
import { readPipelineText } from '../pipeline/load.ts';
import { newRunId } from '../queue/names.ts';
import { RateController } from '../queue/rate/controller.ts';
import type { RunTrigger } from '../store/runs.ts';
import { enqueueRun } from './enqueue-run.ts';
import type { Runtime } from './runtime.ts';

export { DEFAULT_MAX_ATTEMPTS } from './enqueue-run.ts';

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

export interface StartOptions {
  trigger?: RunTrigger;
  /** The run's id. Default a new one from `nowMs` (a scheduled tick picks its own beforehand). */
  runId?: string;
  logger: Logger;
  nowMs?: number;
  /** Called once the run and its tasks are in SQLite, before any job is enqueued. */
  onRecorded?: (runId: string) => void;
  /** Stops enqueuing (the run was interrupted meanwhile). */
  signal?: AbortSignal;
}

export async function startRun(
  runtime: Runtime,
  source: string | LoadedPipeline,
  options: StartOptions,
): Promise<StartedRun> {
  const { pipeline, text, warnings } =
    typeof source === 'string' ? await loadValidPipeline(source) : source;
  const { store } = runtime;
  const runId = options.runId ?? newRunId(options.nowMs ?? Date.now());
  // The plan lives only until its tasks are rows: jobs are enqueued from SQLite, page by page,
  // exactly as a resume does, so a large run is not held in memory twice. A run larger than
  // the queue window gets a window's worth, and the feeder (./feeder.ts) enqueues the rest.
  const { taskCount, estimate } = recordPlan(runtime, runId, pipeline, text, options.trigger);
  options.onRecorded?.(runId);
  await new RateController(runtime.redis, runtime.keys, runtime.searchQueue, options.logger).start(
    pipeline.run?.rateLimitPerMinute,
  );
  // Running from its first job on: a local pool may finish tasks before enqueuing ends.
  store.runs.setStatus(runId, 'running');
  await enqueueRun(runtime, runId, pipeline, options.signal);
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
  const media = mediaSettingsOf(runtime, pipeline);
  const pipelineId = store.pipelines.upsert({
    name: pipeline.name,
    hash: pipelineTextHash(text),
    yamlText: text,
  });
  store.runs.create({
    id: runId,
    pipelineId,
    trigger,
    maxCredits: pipeline.budget?.maxCredits ?? null,
    taskCount: 0,
  });
  if (media) store.media.configure({ runId, ...media });
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
  store.runEstimates.set(runId, {
    minCredits: estimate.minCredits,
    maxCredits: estimate.maxCredits,
    tasks: tasks.taskCount,
  });
  return {
    taskCount: tasks.taskCount,
    estimate: { min: estimate.minCredits, max: estimate.maxCredits },
  };
}

/**
 * What the run saves of its media (written with the run, before any of its results can
 * arrive); undefined when it saves none. Refuses a folder outside the data directory.
 */
function mediaSettingsOf(runtime: Runtime, pipeline: Pipeline) {
  const kinds = kindsToSave(pipeline.media);
  if (kinds.length === 0) return undefined;
  const dir = pipeline.media?.dir ?? 'media';
  mediaRoot(runtime.settings.dataDir, dir);
  return {
    kinds,
    dir,
    maxBytes: pipeline.media?.maxBytes ?? MEDIA_MAX_BYTES_DEFAULT,
    marginMaxMs: runtime.settings.media.marginMaxMs,
  };
}
